#include "internal/worker/llm_embedder.h"

#include <algorithm>
#include <stdexcept>

#include "internal/openai/client.h"
#include "internal/openai/errors.h"

namespace autonous::worker {

LlmEmbedder::LlmEmbedder(openai::Client& client, std::string model,
                         std::chrono::milliseconds timeout)
    : client_(client), model_(std::move(model)), timeout_(timeout) {}

std::vector<std::vector<float>> LlmEmbedder::embed(const std::vector<std::string>& texts) {
  std::chrono::milliseconds limit = timeout_;
  if (deadline_ != std::chrono::steady_clock::time_point::max()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline_ - std::chrono::steady_clock::now());
    if (left <= std::chrono::milliseconds(0))
      throw std::runtime_error("the embeddings step ran out of its EMBEDDING_TIMEOUT_MS");
    limit = std::min(limit, left);
  }
  try {
    openai::EmbeddingResult r = client_.embed(model_, texts, limit, keep_going_);
    calls_.push_back(SideCall{model_, r.usage, r.latency});
    return std::move(r.vectors);
  } catch (const openai::ApiError& e) {
    // 400 / 413 / 422: this input is refused (too long for the model, …), not the moment.
    if (e.status() == 400 || e.status() == 413 || e.status() == 422)
      throw recall::EmbeddingRefused(e.what());
    throw;
  }
}

}  // namespace autonous::worker
