#pragma once
// The normal chat completion: "reply to: <last user message> (saw N messages)", its finish reason
// and usage (prompt_tokens scaled by --usage-scale), and usage.prompt_tokens_details.cached_tokens
// from a provider-style prefix cache. Faults may reshape the reply through ReplyShape.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "cmd/autonous-stub/http.h"

namespace autonous::stub {

// What the reply is built from in a request's "messages".
struct Prompt {
  std::string last_user;              // the content of the last user message
  size_t chars = 0;                   // the content characters of all messages
  std::vector<std::string> messages;  // role + '\x1f' + content of each, for the prefix cache
};

// Reads `messages` (a JSON array); throws json's type_error on a message that is not an object or
// whose role or content is not a string.
Prompt read_prompt(const json& messages);

// "reply to: <last user message> (saw N messages)".
std::string chat_content(const Prompt& prompt, size_t message_count);

// The reply to send unless a fault answers instead; faults may change any part of it.
struct ReplyShape {
  json content;     // a string, or null
  json tool_calls;  // null, or the calls (finish "tool_calls")
  std::string finish = "stop";
  bool usage = true;
  std::optional<int64_t> prompt_tokens;  // reported instead of the stub's own count
  bool chunked = false;
  std::string refusal;          // message.refusal (OpenAI's refusal), when not empty
  bool deepseek_cache = false;  // cache hits as DeepSeek reports them (prompt_cache_hit_tokens)
};

// The 200 response for a chat request `body`: the completion (model from the body), usage when the
// shape asks for it, as one body or in two chunks.
std::string reply_response(const json& body, const ReplyShape& shape, size_t prompt_chars,
                           int64_t cached_chars, double usage_scale);
// The completion object itself (what reply_response sends, or streams.h streams).
json reply_json(const json& body, const ReplyShape& shape, size_t prompt_chars,
                int64_t cached_chars, double usage_scale);

// A provider-style prefix cache: how many characters of the prompt repeat, message for message,
// the start of an earlier request's prompt. It remembers a hash of every message-boundary prefix
// seen (forgotten all at once past a million), so a request costs one pass over its own text.
class PrefixCache {
 public:
  // The cached characters of `messages` (Prompt::messages); remembers its prefixes. Thread-safe.
  int64_t remember(const std::vector<std::string>& messages);

 private:
  std::mutex mu_;
  std::unordered_set<uint64_t> seen_;
};

}  // namespace autonous::stub
