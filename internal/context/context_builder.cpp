#include "internal/context/context_builder.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/common/utf8.h"
#include "internal/context/assembler.h"
#include "internal/context/compressor.h"
#include "internal/context/provider.h"
#include "internal/context/token_budget.h"
#include "internal/context/token_counter.h"
#include "internal/context/truncate.h"

namespace autonous::context {
namespace {

int64_t system_cost(const std::string& system_prompt, const TokenCounter& counter) {
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
      {"settings", b.chat_settings ? "chat" : "env"},
      {"cleared_through", b.cleared_through},
      {"build_us", b.build_time.count()}};
  return j;
}

}  // namespace

int64_t min_budget(const std::string& system_prompt, const TokenCounter& counter) {
  return counter.per_request() + system_cost(system_prompt, counter) + counter.per_message() +
         kMinUserTokens;
}

void check_budget(const ContextSettings& settings, const TokenCounter& counter) {
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
                               const TokenCounter& counter)
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
    const ChatOverrides overrides = parse_overrides(state.settings_json);
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
  if (out.strategy == Strategy::kSummarize) {
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
  if (limit > 0) history = provider_.get_history(chat_id, limit, state.cleared_through);
  out.original_count = static_cast<int64_t>(history.size());
  TokenBudget budget;
  budget.max_tokens = out.history_budget_tokens;
  budget.max_chars = settings_.max_chars_per_message;
  budget.fixed_tokens = fixed;
  budget.thresholds = policy.thresholds;
  budget.min_level = options.min_level;
  Compression kept = compressor_.compress(std::move(history), budget);
  out.compressed_count = static_cast<int64_t>(kept.messages.size());
  out.dropped_count = kept.dropped_count;
  out.truncated_count = kept.truncated_count;
  out.cut_messages = kept.cut_count;
  out.level = kept.level;
  out.rounds = kept.rounds;
  out.hard_truncated = kept.hard_truncated;
  out.tokens_before = fixed + kept.tokens_before;
  if (out.user_truncated) {  // the last resort ran
    out.level = Level::kEmergency;
    out.rounds = std::max(out.rounds, 1);
  }

  out.messages = assembler_.assemble(system, kept.messages, user);
  out.estimated_tokens = counter_.count_prompt(out.messages);
  out.build_time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  return out;
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
