#pragma once
// Model presets: context window and a sensible output reserve for mainstream model families,
// and the rule that turns them into the prompt budget:
//   MAX_CONTEXT_TOKENS when set (never above window − reserve when a window is known);
//   else window − reserve from CONTEXT_WINDOW / RESERVE_OUTPUT_TOKENS or the model's preset;
//   else 8000.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

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

struct ModelPreset {
  std::string_view prefix;  // matched against the normalised model name
  std::string_view family;
  int64_t window = 0;   // tokens in + out the model accepts
  int64_t reserve = 0;  // tokens kept free for the reply
  RequestShape shape = RequestShape::kClassic;
  bool exact = false;  // matches the whole name only (before any prefix is tried)
  // Matches a provider's or Hugging Face's name only, never Ollama's `name:tag`: Ollama cuts a
  // prompt to its num_ctx without a word, and a known window would let calibration lower the
  // scale from the cut count (docs/tokens.md). The older presets predate this and keep matching.
  bool api_names = false;
};

// Every preset, most specific first within a family.
std::span<const ModelPreset> model_presets();

// The preset for `model`: case-insensitive; a provider prefix ("openai/", "meta-llama/") and a
// leading "meta-" are ignored; an exact preset wins, then the longest matching prefix. nullopt
// for an unknown model.
std::optional<ModelPreset> find_preset(std::string_view model);

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
