#pragma once
// The context engine's stored memory (migration 0006): context_state, a chat's verbatim start
// and summarize back-off, written at compactions only; and learned_limits, the prompt budget an
// endpoint's context-overflow answers taught for a model, so later turns fit the first time.
// What is the same on every backend; each stores them (backend/<driver>/stores.h).

#include <cstdint>
#include <optional>
#include <string>

namespace autonous::engine {

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

// The learned-limit rule, written once: the assignments both backends' upserts run (INSERT …
// ON CONFLICT (endpoint, model) DO UPDATE SET <this>, <learned_at>; `excluded` is the limit just
// learned). A limit the server stated replaces what was stored (the server said so); one
// guessed without a stated window never raises a smaller one; the stated window is kept until a
// new one is stated.
inline constexpr const char* kLearnLimitUpdate =
    "budget_tokens = CASE WHEN excluded.stated_limit IS NOT NULL THEN excluded.budget_tokens "
    "WHEN excluded.budget_tokens < learned_limits.budget_tokens THEN excluded.budget_tokens "
    "ELSE learned_limits.budget_tokens END, "
    "stated_limit = coalesce(excluded.stated_limit, learned_limits.stated_limit), "
    "message = excluded.message";

// OPENAI_BASE_URL as the key of learned limits: trailing slashes do not make another endpoint.
std::string endpoint_key(std::string base_url);

}  // namespace autonous::engine
