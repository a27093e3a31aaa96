#pragma once
// Recognises the answer a server gives when the prompt exceeded the model's context window, and
// reads the numbers it states: OpenAI/Azure, vLLM, llama.cpp, DeepSeek, Anthropic, Gemini (whose
// body is a JSON array), OpenRouter, Mistral, Groq, Ollama, LM Studio and TGI wordings. Body
// shapes: {"error": {...}} or {"error": "..."}, a top-level "message", [{"error": {...}}], JSON
// inside the message, and plain text from a proxy. Conservative: per-minute token limits (429,
// Groq's 413) are not overflows. Pure.

#include <cstdint>
#include <optional>
#include <string_view>

namespace autonous::openai {

// What an error answer says about a prompt that exceeded the model's context window.
struct Overflow {
  // The window (or max prompt) the message states, in the server's tokens.
  std::optional<int64_t> limit;
  // The tokens the server counted for the request, when stated.
  std::optional<int64_t> requested;
  // The prompt part of `requested`, when stated separately (vLLM's "X in the messages").
  std::optional<int64_t> prompt;
  // No known wording: a 400 or 413 whose error message (or plain-text body, not HTML) has
  // "context", "length", "token" or "too long" ("Input is too long for requested model."). The
  // worker retries once at a smaller budget and keeps a budget only when the retry is answered.
  bool probable = false;
};

// Whether an error answer (HTTP status, the raw body, and the already-extracted error
// type/code/message) is a context-length overflow (or a probable one: Overflow::probable), and
// the numbers it states. nullopt: not an overflow. Only 400, 413 and 422 qualify, unless the server
// marks the overflow itself (code "context_length_exceeded", or llama.cpp's type
// "exceed_context_size_error", which can arrive inside a 200 stream); numbers that do not fit an
// int64 are left unset.
std::optional<Overflow> read_overflow(long status, std::string_view body, std::string_view type,
                                      std::string_view code, std::string_view message);

}  // namespace autonous::openai
