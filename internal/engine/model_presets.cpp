#include "internal/engine/model_presets.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

#include "internal/common/text.h"

namespace autonous::engine {
namespace {

// Windows and output limits as the vendors publish them (late 2026). The reserve is the reply
// room kept free: the model's usual output cap, smaller where the cap is most of the window.
constexpr auto kOpenAI = RequestShape::kOpenAI;
constexpr auto kReasoning = RequestShape::kReasoning;
constexpr auto kClassic = RequestShape::kClassic;

constexpr std::array kPresets = {
    // OpenAI
    ModelPreset{"gpt-4o", "GPT-4o", 128'000, 16'384, kOpenAI},
    ModelPreset{"chatgpt-4o", "GPT-4o", 128'000, 16'384, kOpenAI},
    ModelPreset{"gpt-4.1", "GPT-4.1", 1'047'576, 32'768, kOpenAI},
    ModelPreset{"gpt-4.5", "GPT-4.5", 128'000, 16'384, kOpenAI},
    ModelPreset{"gpt-5-chat-latest", "GPT-5 chat", 128'000, 16'384, kOpenAI, true},
    ModelPreset{"gpt-5", "GPT-5", 400'000, 128'000, kReasoning},
    ModelPreset{"o1-mini", "o-series", 128'000, 25'000, kReasoning},
    ModelPreset{"o1-preview", "o-series", 128'000, 25'000, kReasoning},
    ModelPreset{"o1", "o-series", 200'000, 25'000, kReasoning},
    ModelPreset{"o3", "o-series", 200'000, 25'000, kReasoning},
    ModelPreset{"o4-mini", "o-series", 200'000, 25'000, kReasoning},
    ModelPreset{"gpt-4-turbo", "GPT-4 Turbo", 128'000, 4'096, kOpenAI},
    ModelPreset{"gpt-4-1106", "GPT-4 Turbo", 128'000, 4'096, kOpenAI},
    ModelPreset{"gpt-4-0125", "GPT-4 Turbo", 128'000, 4'096, kOpenAI},
    ModelPreset{"gpt-4-32k", "GPT-4", 32'768, 4'096, kOpenAI},
    ModelPreset{"gpt-4", "GPT-4", 8'192, 1'024, kOpenAI},
    ModelPreset{"gpt-3.5-turbo-instruct", "GPT-3.5", 4'096, 1'024, kOpenAI},
    ModelPreset{"gpt-3.5-turbo", "GPT-3.5", 16'385, 4'096, kOpenAI},
    // Anthropic
    ModelPreset{"claude-3-7", "Claude 3", 200'000, 16'384},
    ModelPreset{"claude-3-5", "Claude 3", 200'000, 8'192},
    ModelPreset{"claude-3", "Claude 3", 200'000, 4'096},
    ModelPreset{"claude-sonnet-4", "Claude 4", 200'000, 16'384},
    ModelPreset{"claude-opus-4", "Claude 4", 200'000, 16'384},
    ModelPreset{"claude-haiku-4", "Claude 4", 200'000, 16'384},
    ModelPreset{"claude-4", "Claude 4", 200'000, 16'384},
    // Google
    ModelPreset{"gemini-1.5-pro", "Gemini", 2'097'152, 8'192},
    ModelPreset{"gemini-1.5", "Gemini", 1'048'576, 8'192},
    ModelPreset{"gemini-2.0", "Gemini", 1'048'576, 8'192},
    ModelPreset{"gemini-2.5", "Gemini", 1'048'576, 32'768},
    ModelPreset{"gemini", "Gemini", 1'048'576, 8'192},
    // Google Gemma (open weights; Hugging Face names, as vLLM, TGI and routers serve them)
    ModelPreset{"gemma-3-270m", "Gemma", 32'768, 4'096, kClassic, false, true},
    ModelPreset{"gemma-3-1b", "Gemma", 32'768, 4'096, kClassic, false, true},
    ModelPreset{"gemma-3n", "Gemma", 32'768, 4'096, kClassic, false, true},
    ModelPreset{"gemma-3", "Gemma", 131'072, 8'192, kClassic, false, true},
    ModelPreset{"gemma-2", "Gemma", 8'192, 1'024, kClassic, false, true},  // and Gemma 1's gemma-2b
    ModelPreset{"gemma-", "Gemma", 8'192, 1'024, kClassic, false, true},
    // Mistral: the API's names and the Hugging Face repositories'. Conservative where a name
    // spans generations: the 32K window of the oldest (mistral-small and -medium are 128K today;
    // CONTEXT_WINDOW raises it).
    ModelPreset{"mistral-large-2402", "Mistral", 32'768, 4'096, kClassic, false, true},
    ModelPreset{"mistral-large", "Mistral", 131'072, 8'192, kClassic, false, true},
    ModelPreset{"pixtral-large", "Mistral", 131'072, 8'192, kClassic, false, true},
    ModelPreset{"codestral-latest", "Mistral", 256'000, 8'192, kClassic, false, true},
    ModelPreset{"codestral-25", "Mistral", 256'000, 8'192, kClassic, false, true},
    ModelPreset{"codestral", "Mistral", 32'768, 4'096, kClassic, false, true},
    ModelPreset{"ministral", "Mistral", 131'072, 8'192, kClassic, false, true},
    ModelPreset{"open-mistral-nemo", "Mistral", 131'072, 8'192, kClassic, false, true},
    ModelPreset{"mistral-nemo", "Mistral", 131'072, 8'192, kClassic, false, true},
    ModelPreset{"mistral-medium", "Mistral", 32'768, 4'096, kClassic, false, true},
    ModelPreset{"mistral-small", "Mistral", 32'768, 4'096, kClassic, false, true},
    ModelPreset{"open-mistral-7b", "Mistral", 32'768, 4'096, kClassic, false, true},
    ModelPreset{"open-mixtral-8x22b", "Mistral", 65'536, 4'096, kClassic, false, true},
    ModelPreset{"open-mixtral", "Mistral", 32'768, 4'096, kClassic, false, true},
    // DeepSeek
    ModelPreset{"deepseek-reasoner", "DeepSeek", 65'536, 16'384},
    ModelPreset{"deepseek", "DeepSeek", 65'536, 8'192},
    // Qwen
    ModelPreset{"qwen-turbo", "Qwen", 1'000'000, 8'192},
    ModelPreset{"qwen-plus", "Qwen", 131'072, 8'192},
    ModelPreset{"qwen-max", "Qwen", 32'768, 8'192},
    ModelPreset{"qwen2.5", "Qwen", 32'768, 4'096},
    ModelPreset{"qwen3", "Qwen", 32'768, 4'096},
    ModelPreset{"qwen", "Qwen", 32'768, 4'096},
    // Meta Llama 3
    ModelPreset{"llama-3.1", "Llama 3", 131'072, 4'096},
    ModelPreset{"llama-3.2", "Llama 3", 131'072, 4'096},
    ModelPreset{"llama-3.3", "Llama 3", 131'072, 4'096},
    ModelPreset{"llama3.1", "Llama 3", 131'072, 4'096},
    ModelPreset{"llama3.2", "Llama 3", 131'072, 4'096},
    ModelPreset{"llama3.3", "Llama 3", 131'072, 4'096},
    ModelPreset{"llama-3", "Llama 3", 8'192, 1'024},
    ModelPreset{"llama3", "Llama 3", 8'192, 1'024},
};

std::string normalise(std::string_view model) {
  std::string s = common::to_lower_ascii(std::string(model));
  if (const auto slash = s.rfind('/'); slash != std::string::npos) s.erase(0, slash + 1);
  if (s.rfind("meta-", 0) == 0) s.erase(0, 5);
  return s;
}

}  // namespace

std::span<const ModelPreset> model_presets() { return kPresets; }

std::optional<ModelPreset> find_preset(std::string_view model) {
  const std::string name = normalise(model);
  for (const ModelPreset& p : kPresets)
    if (p.exact && name == p.prefix) return p;
  const bool ollama_tag = name.find(':') != std::string::npos;
  std::optional<ModelPreset> best;
  for (const ModelPreset& p : kPresets) {
    if (p.exact || name.rfind(p.prefix, 0) != 0 || (p.api_names && ollama_tag)) continue;
    if (!best || p.prefix.size() > best->prefix.size()) best = p;
  }
  return best;
}

std::string_view to_string(RequestShape shape) {
  switch (shape) {
    case RequestShape::kClassic:
      return "classic";
    case RequestShape::kOpenAI:
      return "openai";
    case RequestShape::kReasoning:
      return "reasoning";
    case RequestShape::kBare:
      return "bare";
  }
  return "classic";
}

std::optional<RequestShape> parse_request_shape(std::string_view name) {
  for (const auto shape : {RequestShape::kClassic, RequestShape::kOpenAI, RequestShape::kReasoning,
                           RequestShape::kBare})
    if (name == to_string(shape)) return shape;
  return std::nullopt;
}

RequestShape request_shape(std::string_view model) {
  const std::optional<ModelPreset> preset = find_preset(model);
  return preset ? preset->shape : RequestShape::kClassic;
}

PromptBudget resolve_prompt_budget(const BudgetInputs& in) {
  PromptBudget out;
  const std::optional<ModelPreset> preset = find_preset(in.model);
  out.window = in.context_window.value_or(preset ? preset->window : 0);
  if (in.reserve_output) {
    out.reserve = *in.reserve_output;
  } else if (preset && !in.context_window) {
    out.reserve = preset->reserve;
  } else if (preset) {
    out.reserve = std::min(preset->reserve, out.window / 4);
  } else {
    out.reserve = out.window / 4;  // CONTEXT_WINDOW of an unknown model: a quarter for the reply
  }
  if (out.window > 0) {
    if (out.reserve >= out.window)
      throw std::invalid_argument("output reserve of " + std::to_string(out.reserve) +
                                  " tokens leaves nothing of a " + std::to_string(out.window) +
                                  "-token window");
    out.ceiling = out.window - out.reserve;
  }
  const std::string window_source =
      in.context_window ? std::string("CONTEXT_WINDOW")
                        : (preset ? "preset " + std::string(preset->prefix) : std::string());
  if (in.max_context_tokens) {
    out.tokens = *in.max_context_tokens;
    out.source = "MAX_CONTEXT_TOKENS";
    if (out.ceiling > 0 && out.tokens > out.ceiling) {
      out.tokens = out.ceiling;
      out.clamped = true;
      out.source = "MAX_CONTEXT_TOKENS, lowered to window - reserve (" + window_source + ")";
    }
  } else if (out.ceiling > 0) {
    out.tokens = out.ceiling;
    out.source = window_source;
  } else {
    out.tokens = kUnknownModelBudget;
    out.source = "default";
  }
  return out;
}

}  // namespace autonous::engine
