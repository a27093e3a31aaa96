#pragma once
// Client: one chat completion (or one embeddings call) against an OpenAI-compatible endpoint.
// Builds the request, sends it through an HttpTransport, parses the reply and classifies failures
// (errors.h). It makes one attempt: retry timing belongs to the queue, so a waiting task holds no
// worker slot. Not thread-safe (the transport is per slot). The API key goes only into the
// Authorization header: never into a log line, an exception message or a result.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "internal/common/message.h"
#include "internal/openai/endpoint.h"
#include "internal/openai/redact.h"
#include "internal/openai/types.h"

namespace autonous::openai {

class HttpTransport;
struct HttpResponse;

struct ClientOptions {
  // e.g. https://api.openai.com/v1; "/chat/completions" (or "/embeddings") goes after its path
  // and before its query (Azure: …/deployments/NAME?api-version=…).
  std::string base_url;
  std::string api_key;  // empty: no key header
  std::string model;
  std::chrono::milliseconds timeout{120000};
  size_t max_response_bytes = 8u << 20;  // MAX_RESPONSE_BYTES
  // The header that carries the key as it is (Azure's api-key); empty: Authorization: Bearer.
  std::string key_header = {};
  // Sent on every call (OPENAI_EXTRA_HEADERS); never logged, redacted like the key from what
  // the server's answers echo.
  std::vector<std::pair<std::string, std::string>> extra_headers = {};
};

// Per-call overrides of the request (the summarizer's model, a low temperature, a reply cap).
struct CallOptions {
  std::string model;                             // empty: the client's model
  std::optional<double> temperature;             // unset: the server's default
  std::optional<int64_t> max_tokens;             // unset: no cap
  std::optional<int64_t> max_completion_tokens;  // OpenAI's name for the cap (reasoning included)
  // OpenAI's prompt-cache routing hint: requests with the same key share a cache.
  std::optional<std::string> prompt_cache_key;
  std::optional<std::string> prompt_cache_retention;  // "in_memory" | "24h"
  std::optional<std::string> user;  // OpenAI's end-user field (a hash, never a raw id)
  // The tools offered, as the wire's "tools" array (JSON text); empty: none. A reply that only
  // calls tools is an answer only when some were offered (otherwise an empty reply, as before).
  std::string tools;
  // The wire's "tool_choice" ("none": answer in text, the tools still declared); empty: unset.
  std::string tool_choice;
  // Ask for the reply as a stream (`stream: true`, `stream_options.include_usage`); `on_text`
  // is told the reply's text so far each time it grows (on the calling thread, during the call).
  // A provider that answers with one JSON object instead is read as usual.
  bool stream = false;
  std::function<void(const std::string&)> on_text;
  std::chrono::milliseconds on_text_every{0};  // on_text at most this often (the first at once)
};

class Client {
 public:
  // `transport` must outlive the client.
  Client(HttpTransport& transport, ClientOptions options);

  // Sends `messages` and returns the first choice. Throws TransportError, ApiError or
  // ResponseError (all openai::Error). `keep_going` is polled during the call; false aborts.
  // An assistant message with tool_calls is sent with them (its content null when empty), a
  // tool message with its tool_call_id; a message malformed so is std::invalid_argument.
  ChatResult chat(const std::vector<common::Message>& messages,
                  const std::function<bool()>& keep_going = {}, const CallOptions& call = {});

  // Embeds `inputs` with `model` (POST …/embeddings, float vectors), within `timeout`. Throws
  // as chat() does; a reply without exactly one finite, same-sized vector per input is a
  // ResponseError.
  EmbeddingResult embed(const std::string& model, const std::vector<std::string>& inputs,
                        std::chrono::milliseconds timeout,
                        const std::function<bool()>& keep_going = {});

  const std::string& model() const noexcept { return options_.model; }

 private:
  HttpResponse post(const std::string& url, std::string body, std::chrono::milliseconds timeout,
                    const std::function<bool()>& keep_going,
                    std::function<bool(std::string_view)> on_body = {});

  HttpTransport& transport_;
  ClientOptions options_;
  std::string url_;
  std::string embeddings_url_;
  std::vector<std::string> secrets_;  // the key and the extra headers' values: redacted
};

// The request body for `messages` (exposed for tests and the stub). Throws
// std::invalid_argument for what only a bug makes: `call.tools` not a JSON array, an assistant
// message whose tool_calls are not a non-empty JSON array, a tool message without its
// tool_call_id (chat() throws the same, before sending anything).
std::string request_body(const std::string& model, const std::vector<common::Message>& messages,
                         const CallOptions& call = {});

// Whether `call` offers tools: a non-empty "tools" array. Throws std::invalid_argument when it is
// not a JSON array.
bool offers_tools(const CallOptions& call);

}  // namespace autonous::openai
