#pragma once
// ContextBuilder: runs Provider → Compressor → Assembler for one turn and reports the figures
// the context.compressed event carries. The budget bounds the whole prompt: history gets what
// is left after the system prompt, the user message and the request framing; a user message too
// long for even that is cut (marker) so the prompt never exceeds the budget.
// Not thread-safe (the provider holds a connection); cheap to construct.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "internal/common/message.h"

namespace autonous::context {

class Provider;
class Compressor;
class Assembler;
class TokenCounter;

// Tokens always left for the user message: a budget that cannot hold the system prompt plus
// this much is refused as configuration.
inline constexpr int64_t kMinUserTokens = 16;

struct ContextSettings {
  std::string system_prompt;
  int history_window = 50;
  int64_t max_context_tokens = 8000;
  int64_t max_chars_per_message = 4000;
};

struct BuiltContext {
  std::vector<common::Message> messages;  // what would be sent
  int64_t original_count = 0;             // history messages read
  int64_t compressed_count = 0;           // history messages kept
  int64_t dropped_count = 0;
  int64_t truncated_count = 0;   // kept history messages that were cut
  bool user_truncated = false;   // the user message itself was cut to fit
  int64_t estimated_tokens = 0;  // the whole prompt, by the counter
  int64_t budget_tokens = 0;
  int64_t system_tokens = 0;
  int64_t user_tokens = 0;
  int64_t history_budget_tokens = 0;
  std::string counter;  // the TokenCounter's name
  std::chrono::microseconds build_time{0};
};

// Throws std::invalid_argument (message says why) when `settings` leave less than
// kMinUserTokens for the user message after the system prompt and framing.
void check_budget(const ContextSettings& settings, const TokenCounter& counter);

class ContextBuilder {
 public:
  // All references must outlive the builder. Throws like check_budget().
  ContextBuilder(ContextSettings settings, Provider& provider, const Compressor& compressor,
                 const Assembler& assembler, const TokenCounter& counter);

  // The prompt for `user_text` in `chat_id`. Throws what the provider throws.
  BuiltContext build(const std::string& chat_id, const std::string& user_text) const;

 private:
  ContextSettings settings_;
  Provider& provider_;
  const Compressor& compressor_;
  const Assembler& assembler_;
  const TokenCounter& counter_;
};

// The context.compressed event payload (and `autonous context` figures): a JSON object.
std::string figures_json(const BuiltContext& built);

// `autonous context` output: {"messages": [{role, content}…], figures…}.
std::string dry_run_json(const BuiltContext& built);

}  // namespace autonous::context
