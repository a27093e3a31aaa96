#pragma once
// The fault table: [[stub:KIND[:ARG][*N]]] directives in a user message, counted per directive so
// each fires on its first N requests only, and the responses they answer with.
//
// Faults are injected per message: a user message containing [[stub:KIND[:ARG][*N]]] gets that
// fault on its first N requests (every request without *N), then a normal reply. KIND:
//   429[:S] (Retry-After seconds) · 429ms:MS (retry-after-ms) · 429date:S (Retry-After as a date)
//   400 401 403 404 408 409 500 502 503 (OpenAI-shaped error) · llama400 (numeric code)
//   html502 · empty500 · overflow (400 context_length_exceeded) · malformed (bad JSON, 200)
//   vagueoverflow (400 text/plain "Input is too long for requested model.")
//   truncated (Content-Length larger than the body, then close) · drop (close, no response)
//   hang[:S] (no answer for S seconds, default forever) · slow:MS · null (content null)
//   length (finish_reason length) · nousage · usage:N (usage.prompt_tokens N, hostile ones too)
//   chunked (Transfer-Encoding: chunked) · filtered (content null, finish_reason content_filter)
//   refusal (content null, message.refusal) · or402 (OpenRouter's 402, no credits)
//   deepseek (usage's cache hits as prompt_cache_hit_tokens / prompt_cache_miss_tokens)
// Summary requests have faults of their own, described in summaries.h; hostile bodies (deep
// JSON, huge and endless bodies, a gzip bomb, an echoed key, outage windows) in hostile.h.

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "cmd/autonous-stub/replies.h"

namespace autonous::stub {

struct Fault {
  std::string kind;
  std::string arg;
  std::optional<int> times;  // *N
  std::string directive;     // the whole [[stub:…]] text
};

// The first directive in `text`, if any; throws std::invalid_argument on a bad *N.
std::optional<Fault> find_fault(const std::string& text);

// How many requests each directive has seen. Thread-safe.
class FaultCounter {
 public:
  // Counts one more request for `fault` in a message whose text (its counter's key, with the
  // directive) is `text`; true while that count is within the fault's *N.
  bool fires(const Fault& fault, const std::string& text);

 private:
  std::mutex mu_;
  std::map<std::string, int> counts_;
  std::map<std::string, Clock::time_point> first_seen_;  // down:S outage windows
};

// The extra latency of a slow:MS fault, else 0.
int fault_delay_ms(const Fault& fault);

// Answers a request on fd with `fault` (one that is not summary-only). nullopt when the normal
// reply follows, reshaped in `shape`; otherwise whether the connection stays open.
std::optional<bool> answer_fault(int fd, const Fault& fault, ReplyShape& shape);

}  // namespace autonous::stub
