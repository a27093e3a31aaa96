#pragma once
// Model presets: context window, a sensible output reserve, the tokenizer and the prices of
// mainstream model families, read from a JSON file (config/models.json, shipped in the binary;
// MODELS_FILE puts an operator's entries over it), and the rule that turns them into the prompt
// budget:
//   MAX_CONTEXT_TOKENS when set (never above window − reserve when a window is known);
//   else window − reserve from CONTEXT_WINDOW / RESERVE_OUTPUT_TOKENS or the model's preset;
//   else 8000.

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "internal/common/usage.h"

namespace autonous::engine {

// How a request states its reply cap and temperature (the summarizer's calls):
//   classic    max_tokens, temperature (llama.cpp, vLLM, Ollama, DeepSeek, Mistral, Groq, …)
//   openai     max_completion_tokens, temperature (OpenAI's chat models; max_tokens is deprecated)
//   reasoning  max_completion_tokens with room for hidden reasoning, no temperature (o-series,
//              gpt-5: they refuse max_tokens and any temperature but 1)
//   bare       neither (the server's defaults)
enum class RequestShape { kClassic, kOpenAI, kReasoning, kBare };
std::string_view to_string(RequestShape shape);
std::optional<RequestShape> parse_request_shape(std::string_view name);  // "auto": nullopt

// USD per million tokens, as the vendor lists them for its own API.
struct ModelPrice {
  double input = 0;                    // prompt tokens not served from the provider's cache
  std::optional<double> cached_input;  // cached prompt tokens; unset: unknown (no figure then)
  double output = 0;                   // completion tokens (a reasoning model's hidden ones too)
  // The price holds for prompts up to this many tokens (a tiered price's lower tier): a call
  // with a larger prompt gets no figure. Unset: any prompt.
  std::optional<int64_t> max_prompt_tokens;
};

struct ModelPreset {
  std::string prefix;  // "match": the start of the normalised model name
  std::string family;
  int64_t window = 0;   // tokens in + out the model accepts; 0: not a chat model (embeddings)
  int64_t reserve = 0;  // tokens kept free for the reply
  RequestShape shape = RequestShape::kClassic;
  bool exact = false;  // matches the whole name only (before any prefix is tried)
  // Matches a provider's or Hugging Face's name only, never Ollama's `name:tag`: Ollama cuts a
  // prompt to its num_ctx without a word, and a known window would let calibration lower the
  // scale from the cut count (docs/tokens.md). The older presets predate this and keep matching.
  bool api_names = false;
  std::string tokenizer;            // the TOKEN_COUNTER `auto` picks; empty: by the model's name
  std::optional<ModelPrice> price;  // unset: no cost figure for this model
  std::string source;               // where the figures come from (the vendor's page)
};

// A models file that cannot be used: the message names the entry and the field.
class ModelsFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The presets of a models file's text (config/models.json's shape, docs/providers.md). `base`:
// the presets it extends: an entry whose `match` (and `exact`) is a base entry's replaces the
// fields it gives and keeps the others; a new one is added, starting from what the entry the
// name would match otherwise gives (window, reserve, shape, tokenizer; never its price), so a
// price alone for a dated name keeps the family's window. Throws ModelsFileError.
std::vector<ModelPreset> parse_models(std::string_view json_text,
                                      const std::vector<ModelPreset>& base = {});

// The file shipped in the binary (config/models.json, embedded at build time).
std::string_view shipped_models_json();

// The presets in use: the shipped file's, or those install_models_file() set.
std::shared_ptr<const std::vector<ModelPreset>> model_presets();

// MODELS_FILE: reads `path` and puts its entries over the shipped ones, for every later lookup
// in this process (called once at start; an empty path restores the shipped presets). Throws
// ModelsFileError naming the file.
void install_models_file(const std::string& path);

// The preset for `model`: case-insensitive; a provider prefix ("openai/", "meta-llama/") and a
// leading "meta-" are ignored; an exact preset wins, then the longest matching prefix. nullopt
// for an unknown model.
std::optional<ModelPreset> find_preset(std::string_view model);

// What a call with `usage` cost at `price`, in USD: uncached prompt tokens at the input price,
// cached ones at the cached price, completion tokens at the output price. nullopt when a
// figure it needs is unknown (cached tokens reported and no cached price; a prompt above the
// price's tier).
std::optional<double> cost_usd(const ModelPrice& price, const common::Usage& usage);
// The same for `model`'s preset; nullopt for a model without a price. A price is the entry's
// own model's: it applies to the entry's name itself and to that name with a date or "latest"
// after it (gpt-4o-2024-08-06, claude-sonnet-4-5-20250929, mistral-large-2411), never to a
// longer name the prefix also matches (o1-pro is not o1, gpt-5-pro is not gpt-5).
std::optional<double> cost_usd(std::string_view model, const common::Usage& usage);

// Whether `model` is priced by `preset` (the rule above).
bool price_applies(std::string_view model, const ModelPreset& preset);

// The request shape for `model`: its preset's, classic for an unknown model.
RequestShape request_shape(std::string_view model);

// A reasoning model's reply cap is this many times the answer's size: its hidden reasoning
// counts against it.
inline constexpr int64_t kReasoningRoom = 4;
// The reply cap a call of `shape` sends for an answer of `answer_tokens`.
constexpr int64_t reply_cap(RequestShape shape, int64_t answer_tokens) {
  return shape == RequestShape::kReasoning ? answer_tokens * kReasoningRoom : answer_tokens;
}

inline constexpr int64_t kUnknownModelBudget = 8000;

struct BudgetInputs {
  std::string model;
  std::optional<int64_t> max_context_tokens;  // MAX_CONTEXT_TOKENS, when set
  std::optional<int64_t> context_window;      // CONTEXT_WINDOW, when set
  std::optional<int64_t> reserve_output;      // RESERVE_OUTPUT_TOKENS, when set
};

struct PromptBudget {
  int64_t tokens = kUnknownModelBudget;  // the whole prompt may cost this much
  int64_t window = 0;                    // 0: unknown
  int64_t reserve = 0;
  int64_t ceiling = 0;   // window − reserve; 0 when the window is unknown
  std::string source;    // e.g. "MAX_CONTEXT_TOKENS", "preset gpt-4o", "default"
  bool clamped = false;  // MAX_CONTEXT_TOKENS was above window − reserve and was lowered
};

// Throws std::invalid_argument when the reserve leaves no room (reserve >= window).
PromptBudget resolve_prompt_budget(const BudgetInputs& in);

}  // namespace autonous::engine
