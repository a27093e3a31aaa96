#include "internal/worker/llm_embedder.h"

#include "internal/openai/client.h"
#include "internal/openai/errors.h"

namespace autonous::worker {

LlmEmbedder::LlmEmbedder(openai::Client& client, std::string model,
                         std::chrono::milliseconds timeout)
    : client_(client), model_(std::move(model)), timeout_(timeout) {}

std::vector<std::vector<float>> LlmEmbedder::embed(const std::vector<std::string>& texts) {
  try {
    return client_.embed(model_, texts, timeout_, keep_going_).vectors;
  } catch (const openai::ApiError& e) {
    // 400 / 413 / 422: this input is refused (too long for the model, …), not the moment.
    if (e.status() == 400 || e.status() == 413 || e.status() == 422)
      throw recall::EmbeddingRefused(e.what());
    throw;
  }
}

}  // namespace autonous::worker
