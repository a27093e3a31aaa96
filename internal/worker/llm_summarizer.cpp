#include "internal/worker/llm_summarizer.h"

#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "internal/openai/client.h"
#include "internal/openai/errors.h"
#include "internal/tokens/token_counter.h"

namespace autonous::worker {
namespace {

constexpr std::string_view kTranscriptFrame =
    "<previous_summary>\n\n</previous_summary>\n\n<new_messages>\n</new_messages>";

// The size the prompt asks for: about 0.6 words per token of the cap, with room to spare.
std::string size_sentence(int64_t max_tokens) {
  return "\nKeep the summary under " + std::to_string(std::max<int64_t>(max_tokens * 6 / 10, 50)) +
         " words.";
}

}  // namespace

std::string summary_transcript(const std::string& previous,
                               const std::vector<common::Message>& messages) {
  std::string out = "<previous_summary>\n";
  // Written by a model from user text: no '<' of it may open or close a tag of the transcript.
  std::string summary = previous.empty() ? std::string("(none)") : previous;
  for (size_t at = summary.find('<'); at != std::string::npos; at = summary.find('<', at))
    summary.replace(at, 1, "&lt;");
  out += summary;
  out += "\n</previous_summary>\n\n<new_messages>\n";
  for (const auto& m : messages) {
    nlohmann::ordered_json line = {{"role", common::to_string(m.role)}};
    if (!m.at.empty()) line["at"] = m.at;  // when it was said: relative dates can be resolved
    line["content"] = m.content;
    // A call and its result: what was asked of which tool, and which call a result answers.
    if (!m.tool_calls.empty()) {
      nlohmann::ordered_json calls =
          nlohmann::ordered_json::parse(m.tool_calls, nullptr, /*allow_exceptions=*/false);
      line["tool_calls"] = calls.is_discarded() ? nlohmann::ordered_json(m.tool_calls) : calls;
    }
    if (!m.tool_call_id.empty()) line["tool_call_id"] = m.tool_call_id;
    // JSON escapes quotes, newlines and control characters; '<' too, so nothing closes a tag.
    std::string text = line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    for (size_t at = text.find('<'); at != std::string::npos; at = text.find('<', at))
      text.replace(at, 1, "\\u003c");
    out += text;
    out += '\n';
  }
  out += "</new_messages>";
  return out;
}

LlmSummarizer::LlmSummarizer(openai::Client& client, const tokens::TokenCounter& counter,
                             SummarizerOptions options)
    : client_(client), counter_(counter), options_(std::move(options)) {}

int64_t LlmSummarizer::input_budget() const {
  const int64_t overhead = counter_.per_request() + 2 * counter_.per_message() +
                           counter_.count_text(kSummaryInstructions) +
                           counter_.count_text(size_sentence(options_.max_tokens)) +
                           counter_.count_text(kTranscriptFrame);
  // A tenth left for JSON escaping (quotes, newlines, '<' as \u003c) of the messages.
  return (options_.window_budget - overhead) * 9 / 10;
}

int64_t LlmSummarizer::per_message_overhead() const {
  // One transcript line's framing, a timestamp included.
  return counter_.count_text(
             R"({"role":"assistant","at":"2026-11-22T17:40:00.000Z","content":""})") +
         1;
}

openai::CallOptions LlmSummarizer::call_options() const {
  openai::CallOptions call;
  call.model = options_.model;
  switch (options_.shape) {
    case engine::RequestShape::kClassic:
      call.temperature = 0.2;
      call.max_tokens = options_.max_tokens;
      break;
    case engine::RequestShape::kOpenAI:
      call.temperature = 0.2;
      call.max_completion_tokens = options_.max_tokens;
      break;
    case engine::RequestShape::kReasoning:
      // Hidden reasoning counts against the cap: room for it, or the answer comes back empty.
      call.max_completion_tokens = engine::reply_cap(options_.shape, options_.max_tokens);
      break;
    case engine::RequestShape::kBare:
      break;
  }
  return call;
}

// Waits before the one retry, polling keep_going (the lease keeps being renewed; a shutdown or
// a lost lease ends the wait).
void LlmSummarizer::pause(std::optional<std::chrono::milliseconds> retry_after) const {
  const auto until = std::chrono::steady_clock::now() +
                     std::min(retry_after.value_or(options_.retry_pause), kMaxRetryPause);
  while (std::chrono::steady_clock::now() < until) {
    if (keep_going_ && !keep_going_()) throw engine::SummaryAborted("aborted while waiting");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// An answer cut off at its cap, or one far over it (a server that ignores the cap), is no
// usable summary: it would be dropped from every prompt and fed into every later fold.
void LlmSummarizer::check(const openai::ChatResult& result, const openai::CallOptions& call) const {
  const int64_t cap = call.max_tokens.value_or(call.max_completion_tokens.value_or(0));
  const std::string shape(engine::to_string(options_.shape));
  if (result.finish_reason == "length")
    throw engine::SummaryFailure("the summary was cut off at its cap of " + std::to_string(cap) +
                                 " tokens (SUMMARY_MAX_TOKENS " +
                                 std::to_string(options_.max_tokens) + ", request shape " + shape +
                                 ")");
  // Judged by the API's own count only: ours may count a script several times too high.
  if (!result.usage || cap <= 0) return;
  const int64_t size = result.usage->completion_tokens;
  if (size > cap * 11 / 10)
    throw engine::SummaryFailure("the summary is " + std::to_string(size) +
                                 " tokens, over its cap of " + std::to_string(cap) +
                                 ": the server ignored it");
}

engine::SummaryCall LlmSummarizer::summarize(const std::string& previous,
                                             const std::vector<common::Message>& evicted) {
  const std::vector<common::Message> messages = {
      {common::Role::kSystem,
       std::string(kSummaryInstructions) + size_sentence(options_.max_tokens), 0},
      {common::Role::kUser, summary_transcript(previous, evicted), 0}};
  const openai::CallOptions call = call_options();
  openai::ChatResult result;
  for (int attempt = 1;; ++attempt) {
    try {
      result = client_.chat(messages, keep_going_, call);
      break;
    } catch (const openai::TransportError& e) {
      if (e.aborted()) throw engine::SummaryAborted(e.what());
      if (attempt >= 2 || !e.retryable()) throw engine::SummaryFailure(e.what());
      pause(e.retry_after());
    } catch (const openai::Error& e) {
      if (attempt >= 2 || !e.retryable()) throw engine::SummaryFailure(e.what());
      pause(e.retry_after());
    }
  }
  check(result, call);
  engine::SummaryCall out;
  out.text = result.content;
  // The model asked for, as a chat call's llm.request names it (a server may answer "gpt-4o" as
  // "gpt-4o-2024-08-06"): the metrics' label and context_summaries.model.
  out.model = options_.model;
  out.latency = result.latency;
  out.usage = result.usage;
  return out;
}

}  // namespace autonous::worker
