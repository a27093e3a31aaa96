#include "internal/worker/llm_summarizer.h"

#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "internal/openai/client.h"
#include "internal/openai/errors.h"
#include "internal/tokens/token_counter.h"

namespace autonous::worker {
namespace {

std::string transcript(const std::string& previous, const std::vector<common::Message>& evicted) {
  std::string out = "Previous summary:\n";
  out += previous.empty() ? "(none)" : previous;
  out += "\n\nNew messages:\n";
  for (const auto& m : evicted) {
    out += common::to_string(m.role);
    out += ": ";
    out += m.content;
    out += '\n';
  }
  return out;
}

}  // namespace

LlmSummarizer::LlmSummarizer(openai::Client& client, const tokens::TokenCounter& counter,
                             SummarizerOptions options)
    : client_(client), counter_(counter), options_(std::move(options)) {}

int64_t LlmSummarizer::input_budget() const {
  const int64_t overhead = counter_.per_request() + 2 * counter_.per_message() +
                           counter_.count_text(kSummaryInstructions) +
                           counter_.count_text("Previous summary:\n\n\nNew messages:\n");
  return options_.window_budget - overhead;
}

context::SummaryCall LlmSummarizer::summarize(const std::string& previous,
                                              const std::vector<common::Message>& evicted) {
  const std::vector<common::Message> messages = {
      {common::Role::kSystem, std::string(kSummaryInstructions), 0},
      {common::Role::kUser, transcript(previous, evicted), 0}};
  openai::CallOptions call;
  call.model = options_.model;
  call.temperature = 0.2;
  call.max_tokens = options_.max_tokens;
  openai::ChatResult result;
  for (int attempt = 1;; ++attempt) {
    try {
      result = client_.chat(messages, keep_going_, call);
      break;
    } catch (const openai::Error& e) {
      if (attempt >= 2 || !e.retryable()) throw;
      const auto pause =
          std::min(e.retry_after().value_or(options_.retry_pause), std::chrono::milliseconds(2000));
      std::this_thread::sleep_for(pause);
    }
  }
  if (result.finish_reason == "length")
    throw std::runtime_error("the summary was cut off at SUMMARY_MAX_TOKENS (" +
                             std::to_string(options_.max_tokens) + ")");
  context::SummaryCall out;
  out.text = result.content;
  out.model = result.model.empty() ? options_.model : result.model;
  out.latency = result.latency;
  out.usage = result.usage;
  return out;
}

}  // namespace autonous::worker
