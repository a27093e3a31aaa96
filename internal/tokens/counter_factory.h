#pragma once
// Chooses the TokenCounter from TOKEN_COUNTER and OPENAI_MODEL: `auto` maps the model to its
// encoding (gpt-4o / 4.1 / 4.5 / 5 / o-series → o200k_base; gpt-4 / gpt-3.5 → cl100k_base) or
// its open-weight family (Llama 3.x → llama3, Qwen → qwen3, DeepSeek V3/R1 → deepseek_v3;
// hf_counter.h) and falls back to the script-aware estimate for other models or when the data
// files are missing, saying so in `warning`. An explicit counter whose data is missing is an
// error. An exact counter comes behind a MemoCounter (memo_counter.h): a message is counted once
// per process.

#include <memory>
#include <optional>
#include <string>

#include "internal/tokens/token_counter.h"

namespace autonous::tokens {

// The encoding OpenAI uses for `model`, or nullopt for models it does not know (other vendors,
// local models).
std::optional<std::string> encoding_for_model(const std::string& model);

struct CounterChoice {
  std::unique_ptr<TokenCounter> counter;
  std::string warning;  // non-empty when `auto` fell back
  // An exact OpenAI encoding's rank tables: mapped from the cache, or built (and cached, or
  // why not). "" for the other counters.
  std::string note;
};

// `setting` is auto, cl100k_base, o200k_base, llama3, qwen3, deepseek_v3, estimate or chars4.
// `preset`: the counter the model's preset names (engine/model_presets.h), which `auto` prefers
// to the name rules; empty: none. `cache_dir`: where the OpenAI encodings' built tables are kept
// (TOKENIZER_CACHE_DIR; BpeRanks::load_cached), "" for none. Throws std::invalid_argument for
// another value, std::runtime_error when an explicitly chosen encoding cannot be loaded.
CounterChoice make_token_counter(const std::string& setting, const std::string& model,
                                 const std::string& data_dir, const std::string& preset = "",
                                 const std::string& cache_dir = "");

}  // namespace autonous::tokens
