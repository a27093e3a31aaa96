#include "internal/context/summary_compactor.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "internal/common/text.h"
#include "internal/common/utf8.h"
#include "internal/context/provider.h"
#include "internal/context/summary.h"
#include "internal/context/truncate.h"
#include "internal/tokens/token_counter.h"

namespace autonous::context {

common::Message prepared(common::Message m, int64_t max_chars) {
  m.content = common::sanitize_utf8(m.content);
  if (max_chars > 0 && common::count_code_points(m.content) > static_cast<size_t>(max_chars))
    m.content = cut_to_chars(m.content, static_cast<size_t>(max_chars));
  return m;
}

SummaryCompactor::SummaryCompactor(const ContextSettings& settings, Provider& provider,
                                   SummaryStore& store, Summarizer* summarizer,
                                   const tokens::TokenCounter& counter)
    : settings_(settings),
      provider_(provider),
      store_(store),
      summarizer_(summarizer),
      counter_(counter) {}

void SummaryCompactor::use(const Summary& s, Compaction& out) const {
  out.summary_message = common::Message{
      common::Role::kSystem, std::string(kSummaryHeader) + common::sanitize_utf8(s.text), 0};
  out.summary.used = true;
  out.summary.id = s.id;
  out.summary.tokens = counter_.count_message(*out.summary_message);
}

// The verbatim tail a compaction keeps: within KEEP_RECENT_TOKENS, and small enough that the
// prompt with a full-size new summary lands at the target.
int64_t SummaryCompactor::keep_tokens(const CompactionInput& in) const {
  const int64_t header = counter_.count_message(
      common::Message{common::Role::kSystem, std::string(kSummaryHeader), 0});
  const auto at_target = static_cast<int64_t>(
      std::floor(in.policy.thresholds.target * static_cast<double>(in.budget_tokens)));
  return std::clamp<int64_t>(at_target - in.fixed_tokens - header - settings_.summary.max_tokens, 0,
                             settings_.summary.keep_recent_tokens > 0
                                 ? settings_.summary.keep_recent_tokens
                                 : in.budget_tokens / 4);
}

Compaction SummaryCompactor::run(const CompactionInput& in) const {
  Compaction out;
  const int window = settings_.history_window;
  const std::optional<Summary> previous = store_.latest(in.chat_id, in.chain_start);
  const int64_t after = std::max(in.chain_start, previous ? previous->covers_through : 0);
  out.history = provider_.get_history(in.chat_id, window, after);
  // Nothing leaves unsummarized: rows that fell out of HISTORY_WINDOW since the last summary
  // are folded in too (the window bounds the verbatim tail, not what the summary covers).
  std::vector<common::Message> beyond;
  if (static_cast<int>(out.history.size()) == window)
    beyond = store_.between(in.chat_id, after, out.history.front().history_id);
  if (previous) use(*previous, out);

  std::vector<int64_t> cost;
  int64_t history_tokens = 0;
  for (const auto& m : out.history) {
    cost.push_back(counter_.count_message(prepared(m, settings_.max_chars_per_message)));
    history_tokens += cost.back();
  }
  const int64_t budget = in.budget_tokens;
  out.tokens_before = in.fixed_tokens + out.summary.tokens + history_tokens;
  out.level =
      std::max(classify(static_cast<double>(out.tokens_before) / static_cast<double>(budget),
                        in.policy.thresholds),
               in.min_level);
  if (beyond.empty() && out.level < Level::kAggressive) return out;

  const int64_t keep = keep_tokens(in);
  size_t split = out.history.size();
  for (int64_t tail = 0; split > 0 && tail + cost[split - 1] <= keep; --split)
    tail += cost[split - 1];
  std::vector<common::Message> evicted = std::move(beyond);
  evicted.insert(evicted.end(), out.history.begin(),
                 out.history.begin() + static_cast<ptrdiff_t>(split));
  if (evicted.empty()) return out;
  out.level = std::max(out.level, Level::kAggressive);
  out.rounds = 1;
  out.summary.pending = static_cast<int64_t>(evicted.size());
  if (summarizer_ == nullptr) return out;  // a dry run: report, call nothing

  try {
    Summary stored;
    out.summarized = fold(in.chat_id, in.chain_start, previous, evicted, stored);
    use(stored, out);
    out.summary.pending = 0;
    out.history.erase(out.history.begin(), out.history.begin() + static_cast<ptrdiff_t>(split));
  } catch (const std::exception& e) {
    // Never lose history, never block the reply: token_budget for this turn (the previous
    // summary, if any, stays in the prompt); the next compaction tries again.
    out.warning = ContextWarning{"summary_failed", e.what()};
  }
  return out;
}

SummaryOutcome SummaryCompactor::fold(const std::string& chat_id, int64_t chain_start,
                                      const std::optional<Summary>& previous,
                                      const std::vector<common::Message>& evicted,
                                      Summary& stored) const {
  SummaryOutcome done;
  const auto started = std::chrono::steady_clock::now();
  std::string text = previous ? previous->text : std::string();
  const int64_t input_budget = std::max<int64_t>(summarizer_->input_budget(), 64);
  std::vector<common::Message> chunk;
  int64_t chunk_tokens = 0;
  auto flush = [&] {
    SummaryCall call = summarizer_->summarize(text, chunk);
    const std::string answer = common::trim(call.text);
    if (answer.empty()) throw std::runtime_error("the summarizer answered nothing");
    text = common::sanitize_utf8(answer);
    done.model = call.model;
    done.usage.push_back(call.usage);
    ++done.calls;
    chunk.clear();
    chunk_tokens = 0;
  };
  // Rolling, and fitted to the summarizer's own window: the previous summary plus as many
  // evicted messages as fit, folded; then the next span into that result.
  for (const auto& original : evicted) {
    common::Message m = prepared(original, settings_.max_chars_per_message);
    int64_t c = counter_.count_message(m);
    if (c > input_budget / 2) {
      m.content = cut_middle_to_tokens(m.content, input_budget / 2 - counter_.per_message(),
                                       c - counter_.per_message(), counter_);
      c = counter_.count_message(m);
    }
    if (!chunk.empty() && counter_.count_text(text) + chunk_tokens + c > input_budget) flush();
    chunk.push_back(std::move(m));
    chunk_tokens += c;
  }
  flush();
  stored.chain_start = chain_start;
  stored.covers_through = evicted.back().history_id;
  stored.text = text;
  stored.model = done.model;
  stored.tokens = counter_.count_message(
      common::Message{common::Role::kSystem, std::string(kSummaryHeader) + text, 0});
  const int64_t header = counter_.count_message(
      common::Message{common::Role::kSystem, std::string(kSummaryHeader), 0});
  const int64_t limit = header + settings_.summary.max_tokens * 5 / 4;
  if (stored.tokens > limit)
    throw std::runtime_error("the summary costs " + std::to_string(stored.tokens) +
                             " tokens, over SUMMARY_MAX_TOKENS (" +
                             std::to_string(settings_.summary.max_tokens) + ")");
  stored.id = store_.save(chat_id, stored, done.usage, static_cast<int64_t>(evicted.size()));
  done.summary_id = stored.id;
  done.messages_covered = static_cast<int64_t>(evicted.size());
  done.covers_through = stored.covers_through;
  done.summary_tokens = stored.tokens;
  done.latency = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  return done;
}

}  // namespace autonous::context
