#pragma once
// TokenCounter: how many tokens a text, a message and a whole request cost.
// The seam where exact BPE counters and script-aware estimators plug in; every budget decision
// in internal/engine goes through it. Implementations are immutable and thread-safe.

#include <cstdint>
#include <string_view>
#include <vector>

#include "internal/common/message.h"

namespace autonous::tokens {

class TokenCounter {
 public:
  virtual ~TokenCounter() = default;
  // Tokens of `text` alone. REQUIRES: valid UTF-8.
  virtual int64_t count_text(std::string_view text) const = 0;
  // Framing tokens each message adds on the wire (role, separators).
  virtual int64_t per_message() const noexcept { return 0; }
  // Framing tokens each request adds once (the reply primer).
  virtual int64_t per_request() const noexcept { return 0; }
  // The name operators see in events and `autonous context`.
  virtual std::string_view name() const noexcept = 0;
  // The name under which this counter's counts of history texts are stored (history.
  // token_counter, migration 0018); empty: none are stored (an estimate costs less to redo than
  // to read).
  virtual std::string_view stored_name() const noexcept { return {}; }
  // A count of `text` read from storage (stored under stored_name()): a counter that remembers
  // counts keeps it, so counting that text costs a lookup. Does nothing by default.
  virtual void remember(std::string_view text, int64_t tokens) const {
    (void)text;
    (void)tokens;
  }

  // A message: its text and its overhead.
  int64_t count_message(const common::Message& m) const {
    return count_text(m.content) + message_overhead(m);
  }
  // What a message costs besides its text: the framing, an assistant's calls (their JSON) and a
  // tool result's call id.
  int64_t message_overhead(const common::Message& m) const {
    return (m.tool_calls.empty() ? 0 : count_text(m.tool_calls)) +
           (m.tool_call_id.empty() ? 0 : count_text(m.tool_call_id)) + per_message();
  }
  // The whole prompt: every message plus the request framing.
  int64_t count_prompt(const std::vector<common::Message>& messages) const;
};

// The seed estimate: (code points + 3) / 4 per message, plus the framing it is given (the
// production wiring uses OpenAI's 4 per message and 3 per request). Conservative for English,
// known to under-count CJK, emoji and JSON (docs/tokens.md).
class CharsOver4Counter final : public TokenCounter {
 public:
  constexpr CharsOver4Counter() noexcept = default;
  constexpr CharsOver4Counter(int64_t per_message, int64_t per_request) noexcept
      : per_message_(per_message), per_request_(per_request) {}
  int64_t count_text(std::string_view text) const override;
  int64_t per_message() const noexcept override { return per_message_; }
  int64_t per_request() const noexcept override { return per_request_; }
  std::string_view name() const noexcept override { return "chars4"; }

 private:
  int64_t per_message_ = 0;
  int64_t per_request_ = 0;
};

// OpenAI's chat framing: tokens each message and each request add on the wire. A message costs
// 3 tokens of framing plus its role, one token for every role OpenAI's encodings know (system,
// developer, user, assistant, tool): 4 (OpenAI's own count, tiktoken's num_tokens_from_messages).
inline constexpr int64_t kFramingPerMessage = 4;
inline constexpr int64_t kFramingPerRequest = 3;

// EstimateTokens from the context issue: the chars/4 estimate of one message.
int64_t estimate_tokens(const common::Message& m);

}  // namespace autonous::tokens
