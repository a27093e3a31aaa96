#include "internal/context/context_builder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/common/utf8.h"
#include "internal/context/assembler.h"
#include "internal/context/compressor.h"
#include "internal/context/provider.h"
#include "internal/context/summary.h"
#include "internal/context/token_budget.h"
#include "internal/tokens/token_counter.h"
#include "internal/context/truncate.h"
#include "internal/common/text.h"

namespace autonous::context {
namespace {

int64_t system_cost(const std::string& system_prompt, const tokens::TokenCounter& counter) {
  if (system_prompt.empty()) return 0;
  const common::Message system{common::Role::kSystem, common::sanitize_utf8(system_prompt), 0};
  return counter.count_message(system);
}

double share(int64_t tokens, int64_t budget) {
  return budget > 0 ? static_cast<double>(tokens) / static_cast<double>(budget) : 0.0;
}

double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

nlohmann::ordered_json figures(const BuiltContext& b) {
  nlohmann::ordered_json j = {
      {"original_count", b.original_count},
      {"compressed_count", b.compressed_count},
      {"dropped_count", b.dropped_count},
      {"truncated_count", b.truncated_count},
      {"user_truncated", b.user_truncated},
      {"estimated_tokens", b.estimated_tokens},
      {"budget_tokens", b.budget_tokens},
      {"system_tokens", b.system_tokens},
      {"user_tokens", b.user_tokens},
      {"history_budget_tokens", b.history_budget_tokens},
      {"message_count", b.messages.size()},
      {"token_counter", b.counter},
      {"level", to_string(b.level)},
      {"strategy", to_string(b.strategy)},
      {"requested_strategy", to_string(b.requested_strategy)},
      {"tokens_before", b.tokens_before},
      {"tokens_after", b.estimated_tokens},
      {"usage_before", round3(share(b.tokens_before, b.budget_tokens))},
      {"usage_after", round3(share(b.estimated_tokens, b.budget_tokens))},
      {"rounds", b.rounds},
      {"cut_messages", b.cut_messages},
      {"hard_truncated", b.hard_truncated},
      {"summary_used", b.summary_used},
      {"summary_id", b.summary_id != 0 ? nlohmann::ordered_json(b.summary_id) : nullptr},
      {"summary_tokens", b.summary_tokens},
      {"summarized", b.summarized.has_value()},
      {"settings", b.chat_settings ? "chat" : "env"},
      {"cleared_through", b.cleared_through},
      {"build_us", b.build_time.count()}};
  return j;
}

}  // namespace

int64_t min_budget(const std::string& system_prompt, const tokens::TokenCounter& counter) {
  return counter.per_request() + system_cost(system_prompt, counter) + counter.per_message() +
         kMinUserTokens;
}

void check_budget(const ContextSettings& settings, const tokens::TokenCounter& counter) {
  validate(settings.policy);
  const int64_t fixed = min_budget(settings.system_prompt, counter);
  if (settings.policy.max_tokens < fixed)
    throw PolicyError(std::string(kKeyMaxTokens),
                      "budget of " + std::to_string(settings.policy.max_tokens) +
                          " tokens cannot hold the system prompt and a user message (needs at "
                          "least " +
                          std::to_string(fixed) + ")");
}

ContextBuilder::ContextBuilder(ContextSettings settings, Provider& provider,
                               const Compressor& compressor, const Assembler& assembler,
                               const tokens::TokenCounter& counter)
    : settings_(std::move(settings)),
      provider_(provider),
      compressor_(compressor),
      assembler_(assembler),
      counter_(counter) {
  check_budget(settings_, counter_);
}

BuiltContext ContextBuilder::build(const std::string& chat_id, const std::string& user_text,
                                   const BuildOptions& options) const {
  const auto started = std::chrono::steady_clock::now();
  BuiltContext out;
  out.counter = std::string(counter_.name());

  // The chat's own settings over the environment's; bad stored settings never stop a turn.
  const ChatState state = provider_.chat_state(chat_id);
  out.cleared_through = state.cleared_through;
  ContextPolicy policy = settings_.policy;
  try {
    // Most chats have no settings of their own: no JSON parse on that path.
    const ChatOverrides overrides =
        state.settings_json == "{}" ? ChatOverrides{} : parse_overrides(state.settings_json);
    if (!overrides.empty()) {
      ContextSettings own = settings_;
      own.policy = apply(settings_.policy, overrides);
      if (settings_.ceiling > 0) own.policy.max_tokens = std::min(own.policy.max_tokens, settings_.ceiling);
      check_budget(own, counter_);
      policy = own.policy;
      out.chat_settings = true;
    }
  } catch (const PolicyError& e) {
    out.warnings.push_back({"bad_chat_settings", std::string("chat settings ignored, environment "
                                                             "defaults used: ") +
                                                     e.what()});
  }
  out.policy = policy;
  out.requested_strategy = policy.strategy;
  out.strategy = policy.strategy;
  if (out.strategy == Strategy::kSummarize && store_ == nullptr) {
    out.strategy = Strategy::kTokenBudget;
    out.warnings.push_back({"summarize_unavailable",
                            "the summarize strategy is not available yet; token_budget used"});
  }

  const int64_t floor_budget = min_budget(settings_.system_prompt, counter_);
  const double scale = std::clamp(options.budget_scale, 0.0, 1.0);
  out.budget_tokens = std::max(
      floor_budget,
      static_cast<int64_t>(std::floor(static_cast<double>(policy.max_tokens) * scale)));

  const common::Message system{common::Role::kSystem,
                               common::sanitize_utf8(settings_.system_prompt), 0};
  common::Message user{common::Role::kUser, common::sanitize_utf8(user_text), 0};
  out.system_tokens = system.content.empty() ? 0 : counter_.count_message(system);

  // What the user message may cost at most; the budget holds kMinUserTokens of it.
  const int64_t user_room = out.budget_tokens - counter_.per_request() - out.system_tokens;
  if (!user.content.empty()) {
    out.user_tokens = counter_.count_message(user);
    if (out.user_tokens > user_room) {
      user.content = cut_to_tokens(user.content, user_room - counter_.per_message(),
                                   out.user_tokens - counter_.per_message(), counter_);
      out.user_truncated = true;
      out.user_tokens = user.content.empty() ? 0 : counter_.count_message(user);
    }
  }
  // A cut user message means history had no room at all (the cut is only near-longest, so a
  // few tokens may be left over; they stay unused rather than hold a stray old message).
  out.history_budget_tokens = out.user_truncated ? 0 : user_room - out.user_tokens;
  const int64_t fixed = counter_.per_request() + out.system_tokens + out.user_tokens;

  int limit = settings_.history_window;
  if (out.strategy == Strategy::kSlidingWindow) limit = std::min(limit, policy.recent_messages);
  std::vector<common::Message> history;
  std::optional<common::Message> summary;
  if (out.strategy == Strategy::kSummarize && limit > 0 && !out.user_truncated) {
    history = summarized_history(chat_id, state.cleared_through, fixed, policy, options, summary,
                                 out);
    if (summary && out.summary_tokens > out.history_budget_tokens) {
      // MustFit first: a summary that does not fit this budget stays out of this prompt.
      out.warnings.push_back({"summary_dropped", "the summary (" +
                                                     std::to_string(out.summary_tokens) +
                                                     " tokens) does not fit the budget"});
      summary.reset();
    }
  } else if (limit > 0) {
    history = provider_.get_history(chat_id, limit, state.cleared_through);
  }
  if (!summary) {
    out.summary_used = false;
    out.summary_tokens = 0;
  }
  out.history_budget_tokens -= out.summary_tokens;
  out.original_count = static_cast<int64_t>(history.size());
  TokenBudget budget;
  budget.max_tokens = out.history_budget_tokens;
  budget.max_chars = settings_.max_chars_per_message;
  budget.fixed_tokens = fixed + out.summary_tokens;
  budget.thresholds = policy.thresholds;
  budget.min_level = options.min_level;
  if (out.strategy == Strategy::kSummarize) {
    // The summary already compacted the history down to the target; here the compressor only
    // guarantees the fit. No cuts below the limit: they would change the cached prefix.
    budget.thresholds = Thresholds{1.0, 1.0, 1.0, policy.thresholds.target};
    budget.min_level = Level::kNone;
  }
  Compression kept = compressor_.compress(std::move(history), budget);
  out.compressed_count = static_cast<int64_t>(kept.messages.size());
  out.dropped_count = kept.dropped_count;
  out.truncated_count = kept.truncated_count;
  out.cut_messages = kept.cut_count;
  out.level = std::max(out.level, kept.level);
  out.rounds = std::max(out.rounds, kept.rounds);
  out.hard_truncated = kept.hard_truncated;
  out.tokens_before = std::max(out.tokens_before, fixed + out.summary_tokens + kept.tokens_before);
  if (out.user_truncated) {  // the last resort ran
    out.level = Level::kEmergency;
    out.rounds = std::max(out.rounds, 1);
  }

  if (summary) kept.messages.insert(kept.messages.begin(), std::move(*summary));
  out.messages = assembler_.assemble(system, kept.messages, user);
  out.estimated_tokens = counter_.count_prompt(out.messages);
  out.build_time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  return out;
}

namespace {

// A history message as the compressor will see it: valid UTF-8, cut to the character cap.
common::Message prepared(common::Message m, int64_t max_chars) {
  m.content = common::sanitize_utf8(m.content);
  if (max_chars > 0 && common::count_code_points(m.content) > static_cast<size_t>(max_chars))
    m.content = cut_to_chars(m.content, static_cast<size_t>(max_chars));
  return m;
}


}  // namespace

std::vector<common::Message> ContextBuilder::summarized_history(
    const std::string& chat_id, int64_t chain_start, int64_t fixed_without_summary,
    const ContextPolicy& policy, const BuildOptions& options,
    std::optional<common::Message>& summary_message, BuiltContext& out) const {
  const int window = settings_.history_window;
  std::optional<Summary> previous = store_->latest(chat_id, chain_start);
  const int64_t after = std::max(chain_start, previous ? previous->covers_through : 0);
  std::vector<common::Message> history = provider_.get_history(chat_id, window, after);
  // Nothing leaves unsummarized: rows that fell out of HISTORY_WINDOW since the last summary
  // are folded in too (the window bounds the verbatim tail, not what the summary covers).
  std::vector<common::Message> beyond;
  if (static_cast<int>(history.size()) == window)
    beyond = store_->between(chat_id, after, history.front().history_id);

  auto use_summary = [&](const Summary& s) {
    summary_message = common::Message{common::Role::kSystem,
                                      std::string(kSummaryHeader) + common::sanitize_utf8(s.text), 0};
    out.summary_used = true;
    out.summary_id = s.id;
    out.summary_tokens = counter_.count_message(*summary_message);
  };
  if (previous) use_summary(*previous);

  std::vector<int64_t> cost;
  int64_t history_tokens = 0;
  for (const auto& m : history) {
    cost.push_back(counter_.count_message(prepared(m, settings_.max_chars_per_message)));
    history_tokens += cost.back();
  }
  const int64_t budget = out.budget_tokens;
  const int64_t before = fixed_without_summary + out.summary_tokens + history_tokens;
  out.tokens_before = before;
  const Level level =
      std::max(classify(static_cast<double>(before) / static_cast<double>(budget),
                        policy.thresholds),
               options.min_level);
  out.level = level;
  if (beyond.empty() && level < Level::kAggressive) return history;

  // Compaction: keep the newest run within KEEP_RECENT_TOKENS, and small enough that the
  // prompt with a full-size new summary lands at the target.
  const int64_t header = counter_.count_message(
      common::Message{common::Role::kSystem, std::string(kSummaryHeader), 0});
  const auto at_target = static_cast<int64_t>(
      std::floor(policy.thresholds.target * static_cast<double>(budget)));
  const int64_t keep = std::clamp<int64_t>(
      at_target - fixed_without_summary - header - settings_.summary.max_tokens, 0,
      settings_.summary.keep_recent_tokens > 0 ? settings_.summary.keep_recent_tokens
                                               : budget / 4);
  size_t split = history.size();
  for (int64_t tail = 0; split > 0 && tail + cost[split - 1] <= keep; --split)
    tail += cost[split - 1];
  std::vector<common::Message> evicted = std::move(beyond);
  evicted.insert(evicted.end(), history.begin(), history.begin() + static_cast<ptrdiff_t>(split));
  if (evicted.empty()) return history;
  out.level = std::max(level, Level::kAggressive);
  out.rounds = 1;
  out.summary_pending = static_cast<int64_t>(evicted.size());
  if (summarizer_ == nullptr) return history;  // a dry run: report, call nothing

  try {
    SummaryOutcome done;
    const auto started = std::chrono::steady_clock::now();
    std::string text = previous ? previous->text : std::string();
    const int64_t input_budget = std::max<int64_t>(summarizer_->input_budget(), 64);
    std::vector<common::Message> chunk;
    int64_t chunk_tokens = 0;
    nlohmann::json usage = nlohmann::json::array();
    auto flush = [&] {
      SummaryCall call = summarizer_->summarize(text, chunk);
      if (common::trim(call.text).empty()) throw std::runtime_error("the summarizer answered nothing");
      text = common::sanitize_utf8(common::trim(call.text));
      done.model = call.model;
      usage.push_back(nlohmann::json::parse(call.usage_json, nullptr, false));
      if (usage.back().is_discarded()) usage.back() = nullptr;
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
    Summary s;
    s.chain_start = chain_start;
    s.covers_through = evicted.back().history_id;
    s.text = text;
    s.model = done.model;
    s.tokens = counter_.count_message(
        common::Message{common::Role::kSystem, std::string(kSummaryHeader) + text, 0});
    const int64_t limit = header + settings_.summary.max_tokens * 5 / 4;
    if (s.tokens > limit)
      throw std::runtime_error("the summary costs " + std::to_string(s.tokens) +
                               " tokens, over SUMMARY_MAX_TOKENS (" +
                               std::to_string(settings_.summary.max_tokens) + ")");
    done.usage_json = usage.dump();
    s.id = store_->save(chat_id, s, done.usage_json, static_cast<int64_t>(evicted.size()));
    done.summary_id = s.id;
    done.messages_covered = static_cast<int64_t>(evicted.size());
    done.covers_through = s.covers_through;
    done.summary_tokens = s.tokens;
    done.latency = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    use_summary(s);
    out.summarized = std::move(done);
    out.summary_pending = 0;
    history.erase(history.begin(), history.begin() + static_cast<ptrdiff_t>(split));
  } catch (const std::exception& e) {
    // Never lose history, never block the reply: token_budget for this turn (the previous
    // summary, if any, stays in the prompt); the next compaction tries again.
    out.warnings.push_back({"summary_failed", e.what()});
  }
  return history;
}

std::string describe_decision(const BuiltContext& b) {
  const double before = share(b.tokens_before, b.budget_tokens);
  const double after = share(b.estimated_tokens, b.budget_tokens);
  const Thresholds& t = b.policy.thresholds;
  std::string s;
  switch (b.level) {
    case Level::kNone:
      s = fmt::format("none: usage {:.2f} of {} tokens is under soft {:.2f}; sent as is", before,
                      b.budget_tokens, t.soft);
      break;
    case Level::kNormal:
      s = fmt::format("normal: usage {:.2f} >= soft {:.2f}; cut {} oversized message(s), head "
                      "and tail kept",
                      before, t.soft, b.cut_messages);
      break;
    case Level::kAggressive:
      s = fmt::format("aggressive: usage {:.2f} >= warn {:.2f}; cut {} oversized message(s), "
                      "dropped the {} oldest to reach the {:.2f} target",
                      before, t.warn, b.cut_messages, b.dropped_count, t.target);
      break;
    case Level::kEmergency:
      s = fmt::format("emergency: usage {:.2f} >= hard {:.2f}; cut {} oversized message(s), kept "
                      "the newest {} that fit, dropped {}",
                      before, t.hard, b.cut_messages, b.compressed_count, b.dropped_count);
      break;
  }
  if (b.summarized)
    s += fmt::format("; summarized {} older message(s) into summary #{} ({} tokens, {} call(s))",
                     b.summarized->messages_covered, b.summarized->summary_id,
                     b.summarized->summary_tokens, b.summarized->calls);
  else if (b.summary_pending > 0)
    s += fmt::format("; would summarize {} older message(s)", b.summary_pending);
  else if (b.summary_used)
    s += fmt::format("; summary #{} in use ({} tokens)", b.summary_id, b.summary_tokens);
  if (b.user_truncated) s += "; the user message was cut to fit";
  if (b.rounds > 1) s += fmt::format(" ({} rounds)", b.rounds);
  if (b.hard_truncated) s += "; hard truncation";
  if (b.level != Level::kNone) s += fmt::format("; usage now {:.2f}", after);
  return s;
}

std::string figures_json(const BuiltContext& built) {
  return figures(built).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string dry_run_json(const BuiltContext& built) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (const auto& m : built.messages)
    messages.push_back({{"role", common::to_string(m.role)}, {"content", m.content}});
  nlohmann::ordered_json j;
  j["messages"] = std::move(messages);
  const nlohmann::ordered_json f = figures(built);  // a named object: items() refers into it
  for (const auto& [k, v] : f.items()) j[k] = v;
  j["decision"] = describe_decision(built);
  j["thresholds"] = {{"soft", built.policy.thresholds.soft},
                     {"warn", built.policy.thresholds.warn},
                     {"hard", built.policy.thresholds.hard},
                     {"target", built.policy.thresholds.target}};
  auto warnings = nlohmann::ordered_json::array();
  for (const auto& w : built.warnings)
    warnings.push_back({{"reason", w.reason}, {"message", w.message}});
  j["warnings"] = std::move(warnings);
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace autonous::context
