#pragma once
// What an OpenAI-compatible server's answer means: an error status or body classified as the
// ApiError it is (overflows, Retry-After, the server's own retry word), a 2xx chat completion
// read as its first choice (tool calls, usage, a reply withheld by a filter or a refusal, an
// error inside a 200), an embeddings answer checked vector by vector. Server text is redacted
// of `secrets` before it is kept. Pure; the Client (client.h) sends, these read.

#include <cstddef>

#include "internal/openai/http_transport.h"
#include "internal/openai/redact.h"
#include "internal/openai/types.h"

namespace autonous::openai {

// Throws the ApiError `r` (a non-2xx answer, or an error body in a 2xx: `in_success_body`) is.
[[noreturn]] void throw_api_error(const HttpResponse& r, const Secrets& secrets,
                                  bool in_success_body = false);

// The reply of a 2xx chat completion; throws ApiError, ReplyWithheldError or ResponseError.
// Tool calls are read only when the request offered tools.
ChatResult parse_success(const HttpResponse& r, const Secrets& secrets, bool tools_offered);

// One vector per input, in input order; throws ResponseError (or the ApiError in the body).
EmbeddingResult parse_embeddings(const HttpResponse& r, size_t inputs, const Secrets& secrets);

}  // namespace autonous::openai
