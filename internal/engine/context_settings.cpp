#include "internal/engine/context_settings.h"

#include <algorithm>

#include "internal/common/message.h"
#include "internal/common/utf8.h"
#include "internal/tokens/token_counter.h"

namespace autonous::engine {

std::optional<Layout> parse_layout(std::string_view name) {
  if (name == "default") return Layout::kDefault;
  if (name == "sectioned") return Layout::kSectioned;
  if (name == "minimal") return Layout::kMinimal;
  return std::nullopt;
}

std::string_view to_string(Layout layout) {
  switch (layout) {
    case Layout::kDefault:
      return "default";
    case Layout::kSectioned:
      return "sectioned";
    case Layout::kMinimal:
      return "minimal";
  }
  return "default";
}

int64_t min_budget(const std::string& system_prompt, const tokens::TokenCounter& counter) {
  int64_t system = 0;
  if (!system_prompt.empty())
    system = counter.count_message(
        common::Message{common::Role::kSystem, common::sanitize_utf8(system_prompt), 0});
  return counter.per_request() + system + counter.per_message() + kMinUserTokens;
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

void check_summary_room(const ContextSettings& settings) {
  const ContextPolicy& p = settings.policy;
  if (p.strategy != Strategy::kSummarize || settings.summary.max_tokens * 2 <= p.max_tokens) return;
  throw PolicyError(std::string(kKeyMaxTokens),
                    "summarize needs a budget of at least twice SUMMARY_MAX_TOKENS (" +
                        std::to_string(settings.summary.max_tokens * 2) + ")");
}

PromptBudget model_budget(const ContextSettings& settings,
                          const std::optional<std::string>& model) {
  PromptBudget env;
  env.tokens = settings.policy.max_tokens;
  env.ceiling = settings.ceiling;
  if (!model || *model == settings.model) return env;
  try {
    return resolve_prompt_budget({*model, settings.max_context_tokens, std::nullopt, std::nullopt});
  } catch (const std::invalid_argument& e) {
    throw PolicyError(std::string(kKeyModel), e.what());
  }
}

ContextPolicy effective_policy(const ContextSettings& settings, const ChatOverrides& overrides) {
  ContextPolicy p = apply(settings.policy, overrides);
  const PromptBudget budget = model_budget(settings, overrides.model);
  if (!overrides.max_tokens) p.max_tokens = budget.tokens;
  if (budget.ceiling > 0) p.max_tokens = std::min(p.max_tokens, budget.ceiling);
  return p;
}

}  // namespace autonous::engine
