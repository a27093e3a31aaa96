#pragma once
// LlmEmbedder: recall's embeddings call (EMBEDDING_MODEL). It goes through the slot's
// openai::Client (the chat's endpoint and key, or EMBEDDING_BASE_URL's with EMBEDDING_API_KEY;
// the slot's transport and error classification) to POST /embeddings
// within one time limit for the whole turn (EMBEDDING_TIMEOUT_MS, from the turn's first
// begin_step(): every call gets what is left of it), without retries: a failed call costs the
// turn only its vector search. A 400, 413 or 422 answer is a refusal of the input
// (recall::EmbeddingRefused). Not thread-safe: one per slot.

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "internal/recall/recall.h"
#include "internal/worker/turn_outcome.h"

namespace autonous::openai {
class Client;
}

namespace autonous::worker {

class LlmEmbedder final : public recall::Embedder {
 public:
  // `client` must outlive the embedder.
  LlmEmbedder(openai::Client& client, std::string model, std::chrono::milliseconds timeout);

  // Polled during the call (lease renewal, shutdown); set per task, which also starts a new
  // turn's time limit.
  void set_keep_going(std::function<bool()> keep_going) {
    keep_going_ = std::move(keep_going);
    deadline_ = std::chrono::steady_clock::time_point::max();
    calls_.clear();
  }
  // The calls answered since set_keep_going (usage and latency, for llm.response and cost).
  std::vector<SideCall> take_calls() { return std::move(calls_); }

  const std::string& model() const override { return model_; }
  // The turn's first embeddings step starts the clock; a rebuild after an overflow shares it.
  void begin_step() override {
    if (deadline_ == std::chrono::steady_clock::time_point::max())
      deadline_ = std::chrono::steady_clock::now() + timeout_;
  }
  std::vector<std::vector<float>> embed(const std::vector<std::string>& texts) override;

 private:
  openai::Client& client_;
  std::string model_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  std::function<bool()> keep_going_;
  std::vector<SideCall> calls_;
};

}  // namespace autonous::worker
