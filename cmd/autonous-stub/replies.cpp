#include "cmd/autonous-stub/replies.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace autonous::stub {
namespace {

json usage(const ReplyShape& shape, size_t prompt_chars, int64_t cached_chars, double usage_scale) {
  const auto prompt = shape.prompt_tokens.value_or(
      static_cast<int64_t>(static_cast<double>(prompt_chars / 4 + 1) * usage_scale));
  const int64_t completion =
      shape.content.is_string()
          ? static_cast<int64_t>(shape.content.get<std::string>().size() / 4 + 1)
          : 0;
  const int64_t cached = std::min<int64_t>(prompt, cached_chars / 4);
  json out = {
      {"prompt_tokens", prompt},
      {"completion_tokens", completion},
      {"total_tokens",
       prompt > std::numeric_limits<int64_t>::max() - completion ? prompt : prompt + completion}};
  if (shape.deepseek_cache) {
    out["prompt_cache_hit_tokens"] = cached;
    out["prompt_cache_miss_tokens"] = prompt - cached;
  } else {
    out["prompt_tokens_details"] = {{"cached_tokens", cached}};
  }
  return out;
}

json completion(const json& body, const ReplyShape& shape) {
  json message = {{"role", "assistant"}, {"content", shape.content}};
  if (!shape.tool_calls.is_null()) message["tool_calls"] = shape.tool_calls;
  if (!shape.refusal.empty()) message["refusal"] = shape.refusal;
  return {
      {"id", "chatcmpl-stub"},
      {"object", "chat.completion"},
      {"created",
       std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count()},
      {"model", body.value("model", "stub")},
      {"system_fingerprint", "stub"},
      {"choices",
       json::array({{{"index", 0}, {"message", message}, {"finish_reason", shape.finish}}})}};
}

// The user's own text: a user message without the engine's data blocks (a summary leading it,
// recalled messages and documents following it). Fault directives and echoed replies come from
// it alone.
std::string own_text(std::string content) {
  for (const std::string tag : {"conversation_summary", "recalled_messages", "documents"}) {
    const size_t open = content.find("<" + tag + ">");
    const size_t close = content.rfind("</" + tag + ">");
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    content.erase(open, close + tag.size() + 3 - open);
  }
  const size_t first = content.find_first_not_of(" \n");
  const size_t last = content.find_last_not_of(" \n");
  return first == std::string::npos ? std::string() : content.substr(first, last - first + 1);
}

}  // namespace

Prompt read_prompt(const json& messages) {
  Prompt prompt;
  for (const auto& m : messages) {
    // null for an assistant message that only called tools
    const std::string content =
        m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
    prompt.chars += content.size();
    prompt.messages.push_back(m.value("role", "") + '\x1f' + content);
    if (m.value("role", "") == "user") prompt.last_user = own_text(content);
  }
  return prompt;
}

std::string chat_content(const Prompt& prompt, size_t message_count) {
  return "reply to: " + prompt.last_user + " (saw " + std::to_string(message_count) + " messages)";
}

json reply_json(const json& body, const ReplyShape& shape, size_t prompt_chars,
                int64_t cached_chars, double usage_scale) {
  json reply = completion(body, shape);
  if (shape.usage) reply["usage"] = usage(shape, prompt_chars, cached_chars, usage_scale);
  return reply;
}

std::string reply_response(const json& body, const ReplyShape& shape, size_t prompt_chars,
                           int64_t cached_chars, double usage_scale) {
  const json reply = reply_json(body, shape, prompt_chars, cached_chars, usage_scale);
  const std::string text = reply.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!shape.chunked) return response(200, text);
  const size_t half = text.size() / 2;
  return chunked_response({text.substr(0, half), text.substr(half)});
}

int64_t PrefixCache::remember(const std::vector<std::string>& messages) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over the messages, boundaries included
  std::vector<std::pair<uint64_t, size_t>> prefixes;
  size_t length = 0;
  for (const auto& m : messages) {
    for (const unsigned char ch : m) h = (h ^ ch) * 1099511628211ULL;
    h = (h ^ 0x1eU) * 1099511628211ULL;
    length += m.size();
    prefixes.emplace_back(h, length);
  }
  const std::lock_guard lock(mu_);
  size_t cached = 0;
  for (const auto& [hash, len] : prefixes)
    if (seen_.count(hash) != 0) cached = len;
  if (seen_.size() > 1'000'000) seen_.clear();
  for (const auto& p : prefixes) seen_.insert(p.first);
  return static_cast<int64_t>(cached);
}

}  // namespace autonous::stub
