#include "internal/context/context_builder.h"

#include <algorithm>
#include <cmath>

#include "internal/common/utf8.h"
#include "internal/context/assembler.h"
#include "internal/context/compressor.h"
#include "internal/context/provider.h"
#include "internal/context/summary.h"
#include "internal/context/token_budget.h"
#include "internal/context/truncate.h"
#include "internal/tokens/token_counter.h"

namespace autonous::context {

Level next_level(Level level) noexcept {
  if (level == Level::kNone) return Level::kNormal;
  if (level == Level::kNormal) return Level::kAggressive;
  return Level::kEmergency;
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

ResolvedChat ContextBuilder::resolve(const ChatState& state,
                                     std::optional<ContextWarning>& warning) const {
  ResolvedChat chat;
  chat.cleared_through = state.cleared_through;
  chat.policy = settings_.policy;
  try {
    // Most chats have no settings of their own: no JSON parse on that path.
    const ChatOverrides overrides =
        state.settings_json == "{}" ? ChatOverrides{} : parse_overrides(state.settings_json);
    if (!overrides.empty()) {
      ContextSettings own = settings_;
      own.policy = effective_policy(settings_, overrides);
      check_budget(own, counter_);
      chat.policy = own.policy;
      chat.own_settings = true;
    }
  } catch (const PolicyError& e) {
    // Bad stored settings never stop a turn.
    warning = ContextWarning{
        "bad_chat_settings",
        std::string("chat settings ignored, environment defaults used: ") + e.what()};
  }
  chat.requested_strategy = chat.policy.strategy;
  chat.strategy = chat.policy.strategy;
  return chat;
}

ContextBuilder::Ends ContextBuilder::fit_ends(const std::string& user_text,
                                              const ContextPolicy& policy,
                                              const BuildOptions& options) const {
  Ends e;
  const int64_t floor_budget = min_budget(settings_.system_prompt, counter_);
  const double scale = std::clamp(options.budget_scale, 0.0, 1.0);
  e.budget_tokens =
      std::max(floor_budget,
               static_cast<int64_t>(std::floor(static_cast<double>(policy.max_tokens) * scale)));
  e.system = {common::Role::kSystem, common::sanitize_utf8(settings_.system_prompt), 0};
  e.user = {common::Role::kUser, common::sanitize_utf8(user_text), 0};
  e.system_tokens = e.system.content.empty() ? 0 : counter_.count_message(e.system);

  // What the user message may cost at most; the budget holds kMinUserTokens of it.
  const int64_t user_room = e.budget_tokens - counter_.per_request() - e.system_tokens;
  if (!e.user.content.empty()) {
    e.user_tokens = counter_.count_message(e.user);
    if (e.user_tokens > user_room) {
      e.user.content = cut_to_tokens(e.user.content, user_room - counter_.per_message(),
                                     e.user_tokens - counter_.per_message(), counter_);
      e.user_truncated = true;
      e.user_tokens = e.user.content.empty() ? 0 : counter_.count_message(e.user);
    }
  }
  // A cut user message means history had no room at all (the cut is only near-longest, so a
  // few tokens may be left over; they stay unused rather than hold a stray old message).
  e.history_budget_tokens = e.user_truncated ? 0 : user_room - e.user_tokens;
  e.fixed_tokens = counter_.per_request() + e.system_tokens + e.user_tokens;
  return e;
}

Compaction ContextBuilder::read_history(const std::string& chat_id, const ResolvedChat& chat,
                                        const Ends& ends, const BuildOptions& options) const {
  int limit = settings_.history_window;
  if (chat.strategy == Strategy::kSlidingWindow)
    limit = static_cast<int>(std::min<int64_t>(limit, chat.policy.recent_messages));
  Compaction c;
  if (limit <= 0) return c;
  if (chat.strategy != Strategy::kSummarize || ends.user_truncated) {
    c.history = provider_.get_history(chat_id, limit, chat.cleared_through);
    return c;
  }
  const SummaryCompactor compactor(settings_, provider_, *store_, summarizer_, counter_);
  c = compactor.run({chat_id, chat.cleared_through, ends.fixed_tokens, ends.budget_tokens,
                     chat.policy, options.min_level});
  return c;
}

std::optional<common::Message> ContextBuilder::take_summary(Compaction& history,
                                                            BuiltContext& out) const {
  if (history.warning) out.warnings.push_back(*history.warning);
  if (history.summary_message && history.summary.tokens > out.figures.history_budget_tokens) {
    // MustFit first: a summary that does not fit this budget stays out of this prompt.
    out.warnings.push_back({"summary_dropped", "the summary (" +
                                                   std::to_string(history.summary.tokens) +
                                                   " tokens) does not fit the budget"});
    history.summary_message.reset();
  }
  out.summary = history.summary;
  if (!history.summary_message) {
    out.summary.used = false;
    out.summary.tokens = 0;
  }
  out.summarized = std::move(history.summarized);
  out.figures.history_budget_tokens -= out.summary.tokens;
  out.figures.level = history.level;
  out.figures.rounds = history.rounds;
  out.figures.tokens_before = history.tokens_before;
  return std::move(history.summary_message);
}

Compression ContextBuilder::compress(Compaction history, const Ends& ends,
                                     const BuildOptions& options, BuiltContext& out) const {
  Figures& f = out.figures;
  f.original_count = static_cast<int64_t>(history.history.size());
  const ContextPolicy& policy = out.chat.policy;
  TokenBudget budget;
  budget.max_tokens = f.history_budget_tokens;
  budget.max_chars = settings_.max_chars_per_message;
  budget.fixed_tokens = ends.fixed_tokens + out.summary.tokens;
  budget.thresholds = policy.thresholds;
  budget.min_level = options.min_level;
  if (out.chat.strategy == Strategy::kSummarize) {
    // The compaction already aimed at the target: only the fit is left. No cuts below the
    // limit: they would change the cached prefix.
    budget.thresholds = Thresholds{1.0, 1.0, 1.0, policy.thresholds.target};
    budget.min_level = Level::kNone;
  }
  Compression kept = compressor_.compress(std::move(history.history), budget);
  f.compressed_count = static_cast<int64_t>(kept.messages.size());
  f.dropped_count = kept.dropped_count;
  f.truncated_count = kept.truncated_count;
  f.cut_messages = kept.cut_count;
  f.level = std::max(f.level, kept.level);
  f.rounds = std::max(f.rounds, kept.rounds);
  f.hard_truncated = kept.hard_truncated;
  f.tokens_before = std::max(f.tokens_before, budget.fixed_tokens + kept.tokens_before);
  if (f.user_truncated) {  // the last resort ran
    f.level = Level::kEmergency;
    f.rounds = std::max(f.rounds, 1);
  }
  return kept;
}

BuiltContext ContextBuilder::build(const std::string& chat_id, const std::string& user_text,
                                   const BuildOptions& options) const {
  const auto started = std::chrono::steady_clock::now();
  BuiltContext out;
  Figures& f = out.figures;
  f.counter = std::string(counter_.name());

  std::optional<ContextWarning> bad_settings;
  out.chat = resolve(provider_.chat_state(chat_id), bad_settings);
  if (bad_settings) out.warnings.push_back(*bad_settings);
  if (out.chat.strategy == Strategy::kSummarize && store_ == nullptr) {
    out.chat.strategy = Strategy::kTokenBudget;
    out.warnings.push_back(
        {"summarize_unavailable",
         "the summarize strategy needs a summary store, which this engine has none of; "
         "token_budget used"});
  }
  const ContextPolicy& policy = out.chat.policy;

  const Ends ends = fit_ends(user_text, policy, options);
  f.budget_tokens = ends.budget_tokens;
  f.system_tokens = ends.system_tokens;
  f.user_tokens = ends.user_tokens;
  f.user_truncated = ends.user_truncated;
  f.history_budget_tokens = ends.history_budget_tokens;

  Compaction history = read_history(chat_id, out.chat, ends, options);
  std::optional<common::Message> summary = take_summary(history, out);
  Compression kept = compress(std::move(history), ends, options, out);
  if (summary) kept.messages.insert(kept.messages.begin(), std::move(*summary));
  out.messages = assembler_.assemble(ends.system, kept.messages, ends.user);
  f.estimated_tokens = counter_.count_prompt(out.messages);
  f.build_time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  return out;
}

}  // namespace autonous::context
