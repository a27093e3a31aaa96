#pragma once
// The context engine's stored memory (migration 0006): context_state, a chat's verbatim start
// and summarize back-off, written at compactions only; and learned_limits, the prompt budget an
// endpoint's context-overflow answers taught for a model, so later turns fit the first time.
// What is the same on every backend; each stores them (backend/<driver>/stores.h).

#include <cstdint>
#include <optional>
#include <string>

namespace autonous::store {

// What an endpoint taught about a model's prompt size.
struct LearnedLimit {
  int64_t budget_tokens = 0;            // the whole prompt, in the engine's tokens
  std::optional<int64_t> stated_limit;  // the window the server stated, in its tokens
  std::string message;                  // the server's answer
  std::string learned_at;
};

struct LearnedLimitRow {
  std::string endpoint;
  std::string model;
  LearnedLimit limit;
};

// OPENAI_BASE_URL as the key of learned limits: trailing slashes do not make another endpoint.
std::string endpoint_key(std::string base_url);

}  // namespace autonous::store
