#include "internal/worker/llm_embedder.h"

#include "internal/openai/client.h"

namespace autonous::worker {

LlmEmbedder::LlmEmbedder(openai::Client& client, std::string model,
                         std::chrono::milliseconds timeout)
    : client_(client), model_(std::move(model)), timeout_(timeout) {}

std::vector<std::vector<float>> LlmEmbedder::embed(const std::vector<std::string>& texts) {
  return client_.embed(model_, texts, timeout_, keep_going_).vectors;
}

}  // namespace autonous::worker
