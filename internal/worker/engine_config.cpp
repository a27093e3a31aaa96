#include "internal/worker/engine_config.h"

#include <stdexcept>

namespace autonous::worker {

const char* variable_for(const std::string& field, const config::Config& config) {
  if (field == context::kKeyStrategy) return "CONTEXT_STRATEGY";
  if (field == context::kKeyRecent) return "RECENT_MESSAGE_COUNT";
  if (field == context::kKeySoft) return "CONTEXT_SOFT_THRESHOLD";
  if (field == context::kKeyWarn) return "CONTEXT_WARN_THRESHOLD";
  if (field == context::kKeyHard) return "CONTEXT_HARD_THRESHOLD";
  if (field == context::kKeyTarget) return "CONTEXT_TARGET";
  if (!config.max_context_tokens && config.context_window) return "CONTEXT_WINDOW";
  return "MAX_CONTEXT_TOKENS";
}

EngineConfig engine_config(const config::Config& config, const tokens::TokenCounter& counter) {
  EngineConfig out;
  try {
    out.budget = context::resolve_prompt_budget({config.openai_model, config.max_context_tokens,
                                                 config.context_window,
                                                 config.reserve_output_tokens});
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError("RESERVE_OUTPUT_TOKENS", e.what());
  }
  context::ContextSettings& s = out.settings;
  s.system_prompt = config.system_prompt;
  s.history_window = config.history_window;
  s.max_chars_per_message = config.max_chars_per_message;
  s.ceiling = out.budget.ceiling;
  s.policy.strategy =
      context::parse_strategy(config.context_strategy).value_or(context::Strategy::kTokenBudget);
  s.policy.max_tokens = out.budget.tokens;
  s.policy.recent_messages = config.recent_message_count;
  s.policy.thresholds = {config.soft_threshold, config.warn_threshold, config.hard_threshold,
                         config.target_usage};
  try {
    context::check_budget(s, counter);
  } catch (const context::PolicyError& e) {
    throw config::ConfigError(variable_for(e.field(), config), e.what());
  }
  s.summary.keep_recent_tokens = config.keep_recent_tokens.value_or(0);
  s.summary.max_tokens = config.summary_max_tokens;
  if (s.policy.strategy == context::Strategy::kSummarize &&
      config.summary_max_tokens * 2 > out.budget.tokens)
    throw config::ConfigError("SUMMARY_MAX_TOKENS",
                              std::to_string(config.summary_max_tokens) +
                                  " leaves too little of the " +
                                  std::to_string(out.budget.tokens) +
                                  "-token prompt budget: a summary may take at most half of it");
  out.summary_model = config.summary_model.empty() ? config.openai_model : config.summary_model;
  try {
    // The summary model's own window, its reply room being SUMMARY_MAX_TOKENS. The chat model's
    // CONTEXT_WINDOW applies to it too when it is the same model.
    const bool same = config.summary_model.empty() || config.summary_model == config.openai_model;
    out.summary_window_budget =
        context::resolve_prompt_budget({out.summary_model, std::nullopt,
                                        same ? config.context_window : std::nullopt,
                                        config.summary_max_tokens})
            .tokens;
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError("SUMMARY_MAX_TOKENS", e.what());
  }
  return out;
}

}  // namespace autonous::worker
