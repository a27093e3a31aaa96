#include "internal/openai/client.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "internal/openai/endpoint.h"
#include "internal/openai/errors.h"
#include "internal/openai/http_transport.h"
#include "internal/openai/redact.h"
#include "internal/openai/response.h"
#include "internal/openai/stream.h"

namespace autonous::openai {
namespace {

using nlohmann::json;

}  // namespace

bool offers_tools(const CallOptions& call) {
  if (call.tools.empty()) return false;
  const json tools = json::parse(call.tools, nullptr, /*allow_exceptions=*/false);
  if (tools.is_discarded() || !tools.is_array())
    throw std::invalid_argument("CallOptions::tools is not a JSON array");
  return !tools.empty();
}

std::string request_body(const std::string& model, const std::vector<common::Message>& messages,
                         const CallOptions& call) {
  json msgs = json::array();
  for (const auto& m : messages) {
    json wire = {{"role", common::to_string(m.role)}, {"content", m.content}};
    if (m.role == common::Role::kAssistant && !m.tool_calls.empty()) {
      json calls = json::parse(m.tool_calls, nullptr, /*allow_exceptions=*/false);
      // Sent as text, the calls' results after it would be orphans the server refuses far from
      // the cause: a bug here, said here.
      if (calls.is_discarded() || !calls.is_array() || calls.empty())
        throw std::invalid_argument("an assistant message's tool_calls are not a JSON array");
      if (m.content.empty()) wire["content"] = nullptr;  // as OpenAI writes a calls-only turn
      wire["tool_calls"] = std::move(calls);
    }
    if (m.role == common::Role::kTool) {
      if (m.tool_call_id.empty())
        throw std::invalid_argument("a tool message without the tool_call_id it answers");
      wire["tool_call_id"] = m.tool_call_id;
    }
    msgs.push_back(std::move(wire));
  }
  json body = {{"model", call.model.empty() ? model : call.model}, {"messages", std::move(msgs)}};
  if (offers_tools(call)) {
    body["tools"] = json::parse(call.tools);
    if (!call.tool_choice.empty()) body["tool_choice"] = call.tool_choice;
  }
  if (call.temperature) body["temperature"] = *call.temperature;
  if (call.max_tokens) body["max_tokens"] = *call.max_tokens;
  if (call.max_completion_tokens) body["max_completion_tokens"] = *call.max_completion_tokens;
  if (call.prompt_cache_key) body["prompt_cache_key"] = *call.prompt_cache_key;
  if (call.prompt_cache_retention) body["prompt_cache_retention"] = *call.prompt_cache_retention;
  if (call.user) body["user"] = *call.user;
  if (call.stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  // Content is valid UTF-8 by the time it gets here; `replace` keeps a bug from becoming a crash.
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

Client::Client(HttpTransport& transport, ClientOptions options)
    : transport_(transport),
      options_(std::move(options)),
      url_(endpoint_url(options_.base_url, "/chat/completions")),
      embeddings_url_(endpoint_url(options_.base_url, "/embeddings")),
      secrets_(secrets_of(options_.api_key, options_.extra_headers)) {}

HttpResponse Client::post(const std::string& url, std::string body,
                          std::chrono::milliseconds timeout,
                          const std::function<bool()>& keep_going,
                          std::function<bool(std::string_view)> on_body) {
  HttpRequest req;
  req.url = url;
  req.headers = {{"Content-Type", "application/json"},
                 {"Accept", on_body ? "text/event-stream" : "application/json"}};
  if (!options_.api_key.empty()) {
    if (options_.key_header.empty())
      req.headers.emplace_back("Authorization", "Bearer " + options_.api_key);
    else
      req.headers.emplace_back(options_.key_header, options_.api_key);
  }
  for (const auto& h : options_.extra_headers) req.headers.push_back(h);
  req.body = std::move(body);
  req.timeout = timeout;
  req.max_body_bytes = options_.max_response_bytes;
  req.keep_going = keep_going;
  req.on_body = std::move(on_body);
  HttpResponse r = transport_.post(req);
  if (r.status < 200 || r.status >= 300) throw_api_error(r, secrets_);
  return r;
}

ChatResult Client::chat(const std::vector<common::Message>& messages,
                        const std::function<bool()>& keep_going, const CallOptions& call) {
  const auto started = std::chrono::steady_clock::now();
  StreamAssembler stream;
  std::optional<std::chrono::milliseconds> ttft;
  std::function<bool(std::string_view)> on_body;
  std::chrono::steady_clock::time_point told{};
  if (call.stream)
    on_body = [&](std::string_view bytes) {
      const bool grew = stream.feed(bytes);
      if (!stream.streaming()) return true;  // one JSON body: kept and capped as always
      // A stream is put together here: its raw events (several times the text) are not kept,
      // and the cap applies to what they add up to.
      if (stream.text().size() > options_.max_response_bytes)
        throw ResponseTooLargeError("streamed reply over " +
                                    std::to_string(options_.max_response_bytes) +
                                    " bytes (MAX_RESPONSE_BYTES)");
      if (!grew) return false;
      const auto now = std::chrono::steady_clock::now();
      if (!ttft) ttft = std::chrono::duration_cast<std::chrono::milliseconds>(now - started);
      // At most every on_text_every (the first text at once): the copy is made only then.
      if (!call.on_text ||
          (told != std::chrono::steady_clock::time_point() && now - told < call.on_text_every))
        return false;
      told = now;
      call.on_text(redacted(stream.text(), secrets_));
      return false;
    };
  HttpResponse r = post(url_, request_body(options_.model, messages, call), options_.timeout,
                        keep_going, std::move(on_body));
  const auto latency = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  if (stream.streaming()) {
    if (!stream.ended())
      throw broken_stream_error(
          "the reply's stream ended before the reply did (no [DONE], no "
          "finish_reason)");
    if (stream.lost())
      throw broken_stream_error(
          "an event of the reply's stream did not read as JSON: a piece of the reply may be "
          "missing");
    r.body = stream.completion_json();
  }
  try {
    ChatResult out = parse_success(r, secrets_, offers_tools(call));
    out.latency = latency;
    out.ttft = ttft;
    return out;
  } catch (ReplyWithheldError& e) {
    e.set_latency(latency);
    throw;
  } catch (ResponseError& e) {
    e.set_latency(latency);
    throw;
  }
}

EmbeddingResult Client::embed(const std::string& model, const std::vector<std::string>& inputs,
                              std::chrono::milliseconds timeout,
                              const std::function<bool()>& keep_going) {
  const auto started = std::chrono::steady_clock::now();
  const json body = {{"model", model}, {"input", inputs}, {"encoding_format", "float"}};
  const HttpResponse r =
      post(embeddings_url_, body.dump(-1, ' ', false, json::error_handler_t::replace), timeout,
           keep_going);
  EmbeddingResult out = parse_embeddings(r, inputs.size(), secrets_);
  out.latency = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  return out;
}

}  // namespace autonous::openai
