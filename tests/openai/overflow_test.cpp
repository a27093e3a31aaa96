#include "internal/openai/overflow.h"

#include <string>

#include <gtest/gtest.h>

namespace autonous::openai {
namespace {

// The answer as it arrives: status and body, nothing extracted yet (the body must suffice).
std::optional<Overflow> from_body(long status, const std::string& body) {
  return read_overflow(status, body, "", "", "");
}

// The bodies below are the servers' own, as quoted in the public reports named above each.

// https://github.com/chathub-dev/chathub/issues/126
TEST(Overflow, OpenAIMessagesResultedIn) {
  const auto o = from_body(
      400,
      R"({"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 4097);
  EXPECT_EQ(o->requested, 4294);
  EXPECT_EQ(o->prompt, std::nullopt);
}

// https://github.com/mckaywrigley/chatbot-ui/issues/102
TEST(Overflow, OpenAIMessagesAndCompletion) {
  const auto o = from_body(400, R"({
  "error": {
    "message": "This model's maximum context length is 4097 tokens. However, you requested 4120 tokens (3120 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
    "type": "invalid_request_error",
    "param": "messages",
    "code": "context_length_exceeded"
  }
})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 4097);
  EXPECT_EQ(o->requested, 4120);
  EXPECT_EQ(o->prompt, 3120);
}

// https://github.com/the-open-agent/openagent/issues/2344 (gpt-4.1 and later: no numbers)
TEST(Overflow, OpenAINewWordingStatesNoNumbers) {
  const auto o = from_body(
      400,
      R"({"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, std::nullopt);
  EXPECT_EQ(o->requested, std::nullopt);
}

// https://github.com/Azure/azure-sdk-for-net/issues/41892
TEST(Overflow, AzureOpenAI) {
  const auto o = from_body(400, R"({
      "error": {
        "message": "This model's maximum context length is 32768 tokens. However, you requested 35969 tokens (9969 in the messages, 26000 in the completion). Please reduce the length of the messages or completion.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded"
      }
    })");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 32768);
  EXPECT_EQ(o->requested, 35969);
  EXPECT_EQ(o->prompt, 9969);
}

// https://github.com/THUDM/LongBench/issues/104 (vLLM's old top-level shape; the tail of the
// object as in https://github.com/vllm-project/vllm/issues/4667)
TEST(Overflow, VllmOldTopLevelShape) {
  const auto o = from_body(
      400,
      R"({"object":"error","message":"This model's maximum context length is 131072 tokens. However, you requested 351430 tokens. Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 131072);
  EXPECT_EQ(o->requested, 351430);
  EXPECT_EQ(o->prompt, std::nullopt);
}

// https://github.com/vllm-project/vllm/issues/20409 (the message), in the same shape
TEST(Overflow, VllmMessagesInTheMessages) {
  const auto o = from_body(
      400,
      R"({"object":"error","message":"This model's maximum context length is 16384 tokens. However, you requested 122946 tokens (112946 in the messages, 10000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 16384);
  EXPECT_EQ(o->requested, 122946);
  EXPECT_EQ(o->prompt, 112946);
}

// vLLM's current wording (vllm/entrypoints, _create_tokens_prompt) in its current shape
// (https://github.com/nashsu/llm_wiki/issues/45).
TEST(Overflow, VllmRequestHasInputTokens) {
  const auto o = from_body(
      400,
      R"({"error":{"message":"This model's maximum context length is 32768 tokens. However, your request has 40000 input tokens. Please reduce the length of the input messages.","type":"BadRequestError","param":null,"code":400}})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 32768);
  EXPECT_EQ(o->requested, 40000);
  EXPECT_EQ(o->prompt, std::nullopt);
}

// vLLM when the prompt fits but prompt + max_tokens does not (message as reported in the wild,
// "(parameter=max_tokens, value=16384)" and all).
TEST(Overflow, VllmMaxTokensTooLarge) {
  const auto o = from_body(
      400,
      R"x({"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 16384. This model's maximum context length is 65536 tokens and your request has 52189 input tokens (16384 > 65536 - 52189). (parameter=max_tokens, value=16384)","type":"BadRequestError","param":"max_tokens","code":400}})x");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 65536);
  EXPECT_EQ(o->requested, 52189 + 16384);
  EXPECT_EQ(o->prompt, 52189);
}

// https://github.com/oobabooga/textgen/issues/7257 (llama.cpp server, before its message gave
// the numbers: they come from n_ctx and n_prompt_tokens)
TEST(Overflow, LlamaCppFields) {
  const auto o = from_body(
      400,
      R"({"error":{"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 8192);
  EXPECT_EQ(o->requested, 14429);
}

// https://github.com/can1357/oh-my-pi/issues/556 (the message); llama.cpp sends the error of a
// stream that already answered 200 inside it, which the client classifies as a 500.
TEST(Overflow, LlamaCppTypeCountsWhateverTheStatus) {
  const auto o = from_body(
      500,
      R"({"error":{"code":400,"message":"request (20001 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error"}})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 8192);
  EXPECT_EQ(o->requested, 20001);
}

// https://github.com/FoundationAgents/OpenManus/issues/79 (Python repr turned back into JSON)
TEST(Overflow, DeepSeek) {
  const auto o = from_body(
      400,
      R"({"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 66343 tokens (62247 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 65536);
  EXPECT_EQ(o->requested, 66343);
  EXPECT_EQ(o->prompt, 62247);
}

// https://github.com/anthropics/claude-code/issues/12186
TEST(Overflow, AnthropicPromptIsTooLong) {
  const auto o = from_body(
      400,
      R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_011CVQe1dLrGNMJyE1ghG1av"})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 200000);
  EXPECT_EQ(o->requested, 208310);
}

// https://github.com/anymorph-ai/Claudable/issues/13
TEST(Overflow, AnthropicInputPlusMaxTokens) {
  const auto o = from_body(
      400,
      R"({"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 196778 + 21333 > 200000, decrease input length or `max_tokens` and try again"},"request_id":"req_011CSUSAvG3cTgFStKLtDKp8"})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 200000);
  EXPECT_EQ(o->requested, 196778 + 21333);
  EXPECT_EQ(o->prompt, 196778);
}

// https://github.com/google-gemini/gemini-cli/issues/6678 (the body is an array, and the
// client extracted nothing from it)
TEST(Overflow, GeminiArrayBody) {
  const std::string body = R"([{
    "error": {
      "code": 400,
      "message": "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
      "errors": [
        {
          "message": "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
          "domain": "global",
          "reason": "badRequest"
        }
      ],
      "status": "INVALID_ARGUMENT"
    }
  }
  ])";
  const auto o = read_overflow(400, body, "", "", "HTTP 400: " + body.substr(0, 300));
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 1048576);
  EXPECT_EQ(o->requested, 1200293);
}

// https://github.com/google-gemini/gemini-cli/issues/4231 (a proxy put Gemini's error, as
// JSON, in its own message)
TEST(Overflow, GeminiErrorInsideMessage) {
  const auto o = from_body(
      400,
      R"({"error":{"message":"{\n  \"error\": {\n    \"code\": 400,\n    \"message\": \"The input token count (3475108) exceeds the maximum number of tokens allowed (1048576).\",\n    \"status\": \"INVALID_ARGUMENT\"\n  }\n}\n","code":400,"status":"Bad Request"}})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 1048576);
  EXPECT_EQ(o->requested, 3475108);
}

// https://github.com/topoteretes/cognee/issues/1061
TEST(Overflow, OpenRouter) {
  const auto o = from_body(
      400,
      R"({"error":{"message":"This endpoint's maximum context length is 16384 tokens. However, you requested about 94307 tokens (94307 of text input). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":null}}})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 16384);
  EXPECT_EQ(o->requested, 94307);
  EXPECT_EQ(o->prompt, 94307);
}

// https://github.com/tailcallhq/forgecode/issues/1143 (a top-level message, input and output)
TEST(Overflow, OpenRouterInputAndOutput) {
  const auto o = from_body(
      400,
      R"({"message":"This endpoint's maximum context length is 200000 tokens. However, you requested about 264437 tokens (262437 of text input, 2000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","metadata":{"provider_name":null}})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 200000);
  EXPECT_EQ(o->requested, 264437);
  EXPECT_EQ(o->prompt, 262437);
}

// https://github.com/tailcallhq/forgecode/issues/1146 (OpenRouter passing on the provider's
// body in metadata.raw; no numbers)
TEST(Overflow, OpenRouterPassesOnTheProvidersBody) {
  const auto o = from_body(
      413,
      R"({"error":{"message":"Provider returned error","code":413,"metadata":{"raw":"{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"Prompt is too long\"}}","provider_name":"Google"}},"code":413})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, std::nullopt);
  EXPECT_EQ(o->requested, std::nullopt);
}

// A mistralai SDKError quoted in a public script ("Status 400. Body: ..."); the wording also at
// https://portkey.ai/error-library/context-length-exceeded-error-13710000
TEST(Overflow, Mistral) {
  const auto o = from_body(
      400,
      R"({"object":"error","message":"Prompt contains 159202 tokens and 0 draft tokens, too large for model with 131072 maximum context length","type":"invalid_request_invalid_args","param":null,"code":"3051","raw_status_code":400})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 131072);
  EXPECT_EQ(o->requested, 159202);
}

// https://github.com/thepersonalaicompany/amurex-backend/issues/51 (Groq states no numbers)
TEST(Overflow, Groq) {
  const auto o = from_body(
      400,
      R"({"error":{"message":"Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, std::nullopt);
  EXPECT_EQ(o->requested, std::nullopt);
}

// https://github.com/ollama/ollama/issues/16800 (native API, truncate:false: llama.cpp's error
// body as a string in Ollama's "error")
TEST(Overflow, OllamaWrapsLlamaCpp) {
  const auto o = from_body(
      400,
      R"({"error":"{\"error\":{\"code\":400,\"message\":\"request (351 tokens) exceeds the available context size (256 tokens), try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":351,\"n_ctx\":256}}"})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 256);
  EXPECT_EQ(o->requested, 351);
}

// Ollama's own refusal states only the excess, which is neither number.
TEST(Overflow, OllamaStatesOnlyTheExcess) {
  const auto o =
      from_body(400, R"({"error":"prompt too long; exceeded max context length by 17 tokens"})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, std::nullopt);
  EXPECT_EQ(o->requested, std::nullopt);
}

// https://github.com/Gitlawb/openclaude/issues/353 ("error" is a string)
TEST(Overflow, LmStudio) {
  const auto o = from_body(
      400,
      R"({"error":"The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 13055>= n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter input."})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 4096);
  EXPECT_EQ(o->requested, 13055);
}

// https://github.com/opea-project/GenAIInfra/issues/487 (body);
// https://github.com/bytedance/UI-TARS-desktop/issues/626 (status 422)
TEST(Overflow, TextGenerationInference) {
  const auto o = from_body(
      422,
      R"({"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 1887 `inputs` tokens and 1024 `max_new_tokens`","error_type":"validation"})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 2048);
  EXPECT_EQ(o->requested, 1887 + 1024);
  EXPECT_EQ(o->prompt, 1887);
}

TEST(Overflow, PlainTextFromAProxyWithThousandsSeparators) {
  const auto o = from_body(413,
                           "Upstream said: This model's maximum context length is 128,000 tokens. "
                           "However, your messages resulted in 1,204,308 tokens.");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 128000);
  EXPECT_EQ(o->requested, 1204308);
}

TEST(Overflow, CallerFieldsSufficeWithoutABody) {
  const auto o = read_overflow(400, "", "invalid_request_error", "context_length_exceeded",
                               "HTTP 400: This model's maximum context length is 8192 tokens.");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 8192);
}

// https://github.com/DrShushen/climb/issues/13: a TPM limit speaks of "too large" and of tokens.
TEST(Overflow, OpenAIRateLimitIsNot) {
  const std::string body =
      R"({"error":{"message":"Request too large for gpt-4o in organization org-VDAWofJASuLH0vVz8o9tiQZr on tokens per min (TPM): Limit 30000, Requested 30601. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}})";
  EXPECT_EQ(from_body(429, body), std::nullopt);
  EXPECT_EQ(from_body(400, body), std::nullopt);
}

// https://github.com/cottongeeks/podscript/issues/20: Groq answers its TPM limit with a 413.
TEST(Overflow, GroqRateLimit413IsNot) {
  EXPECT_EQ(
      from_body(
          413,
          R"({"error":{"message":"Request too large for model `llama-3.3-70b-versatile` in organization `org_01j2g5d88hfvjrgw64hnapqk8y` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 10338, please reduce your message size and try again. Visit https://console.groq.com/docs/rate-limits for more information.","type":"tokens","code":"rate_limit_exceeded"}})"),
      std::nullopt);
}

TEST(Overflow, OtherBadRequestsAreNot) {
  EXPECT_EQ(
      from_body(
          400,
          R"({"error":{"message":"invalid model ID","type":"invalid_request_error","param":null,"code":null}})"),
      std::nullopt);
  EXPECT_EQ(
      from_body(
          404,
          R"({"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}})"),
      std::nullopt);
}

TEST(Overflow, ServerErrorsAreNotEvenWithTheWording) {
  EXPECT_EQ(
      from_body(
          500,
          R"({"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}})"),
      std::nullopt);
  EXPECT_EQ(from_body(503, "upstream: This model's maximum context length is 8192 tokens."),
            std::nullopt);
}

TEST(Overflow, GarbageAndEmptyBodiesAreNot) {
  EXPECT_EQ(from_body(400, "<html><body><h1>400 Bad Request</h1></body></html>"), std::nullopt);
  // A 400 whose text speaks of context is a probable overflow (one smaller try), not a sure one.
  EXPECT_TRUE(from_body(400, "{\"error\": {\"message\": \"maximum context")->probable);
  EXPECT_EQ(from_body(400, std::string("\xff\xfe\0\x01", 4)), std::nullopt);
  EXPECT_EQ(from_body(400, ""), std::nullopt);
  EXPECT_EQ(read_overflow(413, "", "", "", ""), std::nullopt);
}

TEST(Overflow, AnUnknownWordingOfContextLengthOrTokensIsAProbableOne) {
  // Seen from a hosted Llama: a plain 400 in no table's wording.
  const auto vague = from_body(400, "Input is too long for requested model.");
  ASSERT_TRUE(vague);
  EXPECT_TRUE(vague->probable);
  ASSERT_TRUE(from_body(413, R"({"error":{"message":"prompt has too many tokens"}})"));
  EXPECT_TRUE(from_body(413, R"({"error":{"message":"prompt has too many tokens"}})")->probable);
  EXPECT_TRUE(from_body(400, R"({"message":"input length exceeds what this model takes"})"));
  // A known wording is a sure one.
  EXPECT_FALSE(
      from_body(400,
                R"({"error":{"message":"This model's maximum context length is 8192 tokens."}})")
          ->probable);
  // Only a 400 or 413; never a rate limit; never text that names none of the words.
  EXPECT_EQ(from_body(422, R"({"error":{"message":"context too long"}})"), std::nullopt);
  EXPECT_EQ(from_body(429, "Input is too long for requested model."), std::nullopt);
  EXPECT_EQ(from_body(413, "too many tokens per minute"), std::nullopt);
  EXPECT_EQ(from_body(400, R"({"error":{"message":"invalid model ID"}})"), std::nullopt);
  // A proxy's HTML page is no error message; "too large" alone names no length.
  EXPECT_EQ(from_body(400, "<html><h1>400 Request Header Or Cookie Too Large</h1></html>"),
            std::nullopt);
  EXPECT_EQ(from_body(400, R"({"error":{"message":"request too large"}})"), std::nullopt);
}

TEST(Overflow, NumbersBeyondInt64AreUnset) {
  const auto o = from_body(
      400,
      R"({"error":{"message":"This model's maximum context length is 99999999999999999999999 tokens. However, your messages resulted in 123456789012345678901234567890 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}})");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, std::nullopt);
  EXPECT_EQ(o->requested, std::nullopt);

  const auto fields = from_body(
      400,
      R"({"error":{"message":"the request exceeds the available context size","type":"exceed_context_size_error","n_prompt_tokens":1e30,"n_ctx":18446744073709551615}})");
  ASSERT_TRUE(fields.has_value());
  EXPECT_EQ(fields->limit, std::nullopt);
  EXPECT_EQ(fields->requested, std::nullopt);
}

TEST(Overflow, DeeplyNestedBodiesDoNotCrash) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_EQ(from_body(400, deep), std::nullopt);
  // The error beside a deep branch is still read; the branch is dropped unbuilt.
  const std::string beside =
      R"({"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","deep":)" +
      std::string(200000, '[') + std::string(200000, ']') + "}}";
  const auto o = from_body(400, beside);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->limit, 8192);
  EXPECT_EQ(o->requested, 9000);
}

TEST(Overflow, HugeBodiesAreSearchedOnlyAtTheirStart) {
  const std::string digits(1000000, '7');
  EXPECT_EQ(from_body(400, digits), std::nullopt);
  const auto long_number = from_body(400, "maximum context length is " + std::string(5000, '9'));
  ASSERT_TRUE(long_number.has_value());
  EXPECT_EQ(long_number->limit, std::nullopt);
  EXPECT_EQ(from_body(400, std::string(1000000, 'x') + " maximum context length is 8192"),
            std::nullopt);
}

}  // namespace
}  // namespace autonous::openai
