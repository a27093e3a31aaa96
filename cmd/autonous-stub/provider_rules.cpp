#include "cmd/autonous-stub/provider_rules.h"

#include <array>

namespace autonous::stub {
namespace {

bool is_reasoning_model(const std::string& model) {
  if (model.rfind("gpt-5-chat", 0) == 0) return false;
  for (const char* p : {"o1", "o3", "o4", "gpt-5"})
    if (model.rfind(p, 0) == 0) return true;
  return false;
}

std::string bad_request(const std::string& message, const std::string& param,
                        const std::string& code) {
  const json body = {{"error",
                      {{"message", message},
                       {"type", "invalid_request_error"},
                       {"param", param},
                       {"code", code}}}};
  return response(400, body.dump());
}

// OpenAI's answers to a reasoning model's request with max_tokens or a temperature.
std::optional<std::string> openai_refusal(const json& body) {
  if (!is_reasoning_model(body.value("model", ""))) return std::nullopt;
  if (body.contains("max_tokens"))
    return bad_request(
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
        "'max_completion_tokens' instead.",
        "max_tokens", "unsupported_parameter");
  if (body.contains("temperature") && body["temperature"] != 1)
    return bad_request("Unsupported value: 'temperature' does not support " +
                           body["temperature"].dump() +
                           " with this model. Only the default (1) value is supported.",
                       "temperature", "unsupported_value");
  return std::nullopt;
}

// vLLM, llama.cpp and Gemini (a JSON array).
json open_server_overflow(const std::string& style, int64_t limit, int64_t tokens) {
  const std::string n = std::to_string(limit);
  const std::string m = std::to_string(tokens);
  if (style == "vllm")
    return {{"object", "error"},
            {"message", "This model's maximum context length is " + n +
                            " tokens. However, you requested " + m + " tokens (" + m +
                            " in the messages, 0 in the completion). Please reduce the length "
                            "of the messages or completion."},
            {"type", "BadRequestError"},
            {"param", nullptr},
            {"code", 400}};
  if (style == "llamacpp")
    return {{"error",
             {{"code", 400},
              {"message", "request (" + m + " tokens) exceeds the available context size (" + n +
                              " tokens), try increasing it"},
              {"type", "exceed_context_size_error"},
              {"n_prompt_tokens", tokens},
              {"n_ctx", limit}}}};
  return json::array(
      {{{"error",
         {{"code", 400},
          {"message", "The input token count (" + m +
                          ") exceeds the maximum number of tokens allowed (" + n + ")."},
          {"status", "INVALID_ARGUMENT"}}}}});
}

// OpenAI, DeepSeek, Anthropic, Mistral, OpenRouter and Groq.
json hosted_overflow(const std::string& style, int64_t limit, int64_t tokens) {
  const std::string n = std::to_string(limit);
  const std::string m = std::to_string(tokens);
  if (style == "anthropic")
    return {{"type", "error"},
            {"error",
             {{"type", "invalid_request_error"},
              {"message", "prompt is too long: " + m + " tokens > " + n + " maximum"}}}};
  if (style == "mistral")
    return {{"object", "error"},
            {"message", "Prompt contains " + m +
                            " tokens and 0 draft tokens, too large for model with " + n +
                            " maximum context length"},
            {"type", "invalid_request_invalid_args"},
            {"param", nullptr},
            {"code", "3051"}};
  if (style == "openrouter")
    return {{"error",
             {{"message", "This endpoint's maximum context length is " + n +
                              " tokens. However, you requested about " + m + " tokens (" + m +
                              " of text input). Please reduce the length."},
              {"code", 400}}}};
  if (style == "groq")
    return {{"error",
             {{"message", "Please reduce the length of the messages or completion."},
              {"type", "invalid_request_error"},
              {"param", "messages"},
              {"code", "context_length_exceeded"}}}};
  // openai, deepseek: the same sentence; DeepSeek's code differs.
  return {{"error",
           {{"message", "This model's maximum context length is " + n +
                            " tokens. However, your messages resulted in " + m +
                            " tokens. Please reduce the length of the messages."},
            {"type", "invalid_request_error"},
            {"param", "messages"},
            {"code", style == "deepseek" ? "invalid_request_error" : "context_length_exceeded"}}}};
}

std::string overflow_body(const std::string& style, int64_t limit, int64_t tokens) {
  const bool open_server = style == "vllm" || style == "llamacpp" || style == "gemini";
  return (open_server ? open_server_overflow(style, limit, tokens)
                      : hosted_overflow(style, limit, tokens))
      .dump();
}

}  // namespace

bool known_overflow_style(const std::string& style) {
  static const std::array<std::string, 9> kStyles = {"openai",     "vllm",      "llamacpp",
                                                     "gemini",     "anthropic", "mistral",
                                                     "openrouter", "deepseek",  "groq"};
  for (const auto& s : kStyles)
    if (s == style) return true;
  return false;
}

std::optional<std::string> refusal(const ProviderRules& rules, const json& body,
                                   int64_t prompt_tokens) {
  if (rules.openai)
    if (auto r = openai_refusal(body)) return r;
  if (rules.context_limit && prompt_tokens > *rules.context_limit)
    return response(400, overflow_body(rules.overflow_style, *rules.context_limit, prompt_tokens));
  return std::nullopt;
}

}  // namespace autonous::stub
