#pragma once
// Provider behaviour the stub can play, chosen by flags: OpenAI's rules for reasoning models
// (--rules openai: o1/o3/o4/gpt-5 refuse max_tokens and any temperature but 1, with OpenAI's
// error bodies), a context window smaller than the client's budget (--context-limit N with
// --overflow-style: the overflow answer of OpenAI, vLLM, llama.cpp, Gemini (a JSON array),
// Anthropic, Mistral, OpenRouter, DeepSeek or Groq), and Ollama's silent truncation
// (--silent-limit N: usage.prompt_tokens never above N). Prompt tokens are the stub's own count
// (characters / 4 + 1, times --usage-scale), as in its usage.

#include <cstdint>
#include <optional>
#include <string>

#include "cmd/autonous-stub/http.h"

namespace autonous::stub {

struct ProviderRules {
  bool openai = false;                   // --rules openai
  bool strict = false;                   // --rules strict: roles must alternate (tool_calls.h)
  std::optional<int64_t> context_limit;  // --context-limit N
  std::string overflow_style = "openai";
  std::optional<int64_t> silent_limit;  // --silent-limit N
};

// True for the --overflow-style values the stub knows.
bool known_overflow_style(const std::string& style);

// The refusal a request gets under `rules`, or nullopt when it is served. `prompt_tokens` is
// the stub's count of the request's prompt.
std::optional<std::string> refusal(const ProviderRules& rules, const json& body,
                                   int64_t prompt_tokens);

}  // namespace autonous::stub
