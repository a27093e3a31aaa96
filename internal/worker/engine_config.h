#pragma once
// From Config to the context engine's settings: resolves the prompt budget (MAX_CONTEXT_TOKENS,
// or the model preset's window − reserve, or 8000) and the default policy, and refuses a bad
// combination at start, naming the environment variable at fault.

#include "internal/config/config.h"
#include "internal/context/context_builder.h"
#include "internal/context/model_presets.h"

namespace autonous::worker {

struct EngineConfig {
  context::ContextSettings settings;
  context::PromptBudget budget;
  std::string summary_model;         // SUMMARY_MODEL, or OPENAI_MODEL
  int64_t summary_window_budget = 0;  // the summary model's window − SUMMARY_MAX_TOKENS
};

// Throws config::ConfigError naming the variable: thresholds out of order, a reserve that
// leaves no window, a budget too small for the system prompt and a minimal user message.
EngineConfig engine_config(const config::Config& config, const tokens::TokenCounter& counter);

// The environment variable behind a context::PolicyError field.
const char* variable_for(const std::string& policy_field, const config::Config& config);

}  // namespace autonous::worker
