// What an OpenAI-compatible server's answer means (response.h): errors classified, a chat
// completion's reply, an embeddings answer.
#include "internal/openai/response.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "internal/openai/endpoint.h"
#include "internal/openai/errors.h"
#include "internal/openai/overflow.h"
#include "internal/openai/retry_after.h"

namespace autonous::openai {
namespace {

using nlohmann::json;

// At most this much of an error body goes into a message: a proxy's HTML page is not a reason.
constexpr size_t kMaxErrorText = 300;
// Replies nest a few levels (choices[0].message.content parts); a body nested deeper is refused
// before it is parsed.
constexpr int kMaxJsonDepth = 64;

std::string clip(std::string s) {
  if (s.size() > kMaxErrorText) s = s.substr(0, kMaxErrorText) + "...";
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// The deepest nesting of arrays and objects in `text`, outside strings; stops counting once
// past `limit`. A linear scan, no recursion: a hostile body cannot exhaust the stack here.
int nesting_depth(std::string_view text, int limit) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{')
      deepest = std::max(deepest, ++depth);
    else if (c == ']' || c == '}')
      --depth;
    if (deepest > limit) break;
  }
  return deepest;
}

// `text` parsed when it is JSON nested at most kMaxJsonDepth deep; discarded otherwise.
json parse_bounded(std::string_view text) {
  if (nesting_depth(text, kMaxJsonDepth) > kMaxJsonDepth) return json(json::value_t::discarded);
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

// A field as text: strings as they are, numbers and booleans written out (llama.cpp sends
// "code": 400 as a number); objects and arrays are not text.
std::string string_or_empty(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null() || it->is_structured()) return {};
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

// `s` with NUL bytes as U+FFFD: SQLite's text functions see all of it.
std::string without_nul(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (c == '\0')
      out += "\xEF\xBF\xBD";
    else
      out += c;
  }
  return out;
}

// The reply's text. `content` is a string, or (some servers) an array of parts whose "text"
// parts are joined; NUL bytes become U+FFFD so SQLite's text functions see all of it.
std::string content_text(const json& message) {
  std::string out;
  const auto it = message.find("content");
  if (it != message.end() && it->is_array()) {
    for (const auto& part : *it)
      if (part.is_object()) out += string_or_empty(part, "text");
  } else {
    out = string_or_empty(message, "content");
  }
  return without_nul(out);
}

// The HTTP status an error object inside a 2xx body states as its numeric code, else 500.
long status_in_body(const json& body) {
  const json& e = body["error"];
  if (e.is_object())
    if (const auto c = e.find("code"); c != e.end() && c->is_number_integer()) {
      const auto code = c->get<int64_t>();
      if (code >= 400 && code <= 599) return static_cast<long>(code);
    }
  return 500;
}

}  // namespace

[[noreturn]] void throw_api_error(const HttpResponse& r, const Secrets& api_key,
                                  bool in_success_body) {
  std::string type;
  std::string code;
  std::string message;
  const json body = parse_bounded(r.body);
  if (body.is_object() && body.contains("error")) {
    const json& e = body["error"];
    if (e.is_object()) {
      type = string_or_empty(e, "type");
      code = string_or_empty(e, "code");
      message = string_or_empty(e, "message");
    } else if (e.is_string()) {
      message = e.get<std::string>();
    }
  }
  if (message.empty()) message = r.body.empty() ? "(empty body)" : r.body;
  std::optional<bool> should_retry;
  if (auto it = r.headers.find("x-should-retry"); it != r.headers.end()) {
    if (it->second == "true") should_retry = true;
    if (it->second == "false") should_retry = false;
  }
  const std::optional<Overflow> overflow = read_overflow(r.status, r.body, type, code, message);
  // Redacted before clipping, so a key cut in half by the clip cannot survive either.
  // A 402 says why in words of its own (OpenRouter's "Insufficient credits", others' less).
  const std::string said = r.status == 402 ? "payment required: " : "";
  throw ApiError(
      r.status, redacted(type, api_key), redacted(code, api_key),
      "HTTP " + std::to_string(r.status) + ": " + said + clip(redacted(message, api_key)),
      parse_retry_after(r.headers, std::chrono::system_clock::now()), should_retry, in_success_body,
      overflow);
}

namespace {

int64_t int_or_zero(const json& j, const char* key) {
  const auto it = j.find(key);
  return (it != j.end() && it->is_number_integer()) ? it->get<int64_t>() : 0;
}

// The body's usage object, when it has one (chat completions and embeddings alike).
std::optional<Usage> read_usage(const json& body) {
  const auto u = body.find("usage");
  if (u == body.end() || !u->is_object()) return std::nullopt;
  Usage usage;
  usage.prompt_tokens = int_or_zero(*u, "prompt_tokens");
  usage.completion_tokens = int_or_zero(*u, "completion_tokens");
  usage.total_tokens = int_or_zero(*u, "total_tokens");
  if (const auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object()) {
    if (const auto c = d->find("cached_tokens"); c != d->end() && c->is_number_integer())
      usage.cached_tokens = c->get<int64_t>();
  }
  // DeepSeek's own field for the prompt's tokens read from its cache (part of prompt_tokens).
  if (!usage.cached_tokens)
    if (const auto c = u->find("prompt_cache_hit_tokens"); c != u->end() && c->is_number_integer())
      usage.cached_tokens = c->get<int64_t>();
  if (usage.cached_tokens)  // a part of the prompt: within [0, prompt_tokens]
    usage.cached_tokens = std::clamp<int64_t>(*usage.cached_tokens, 0, usage.prompt_tokens);
  return usage;
}

// An id for a call the server gave none (or one another call of the reply already has): 9
// random letters and digits, the strictest rule a server holds ids to (Mistral's).
std::string made_up_call_id() {
  static constexpr std::string_view kAlphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 random{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
  std::string id;
  for (int i = 0; i < 9; ++i) id += kAlphabet[pick(random)];
  return id;
}

// A reply's tool calls (message.tool_calls), each {id, function: {name, arguments}}. Servers
// differ: an id may be missing (llama.cpp's older builds) or repeated, `arguments` an object
// instead of the JSON text OpenAI sends, or "" for none. Each call is kept whole for its replay
// (a server may require its own fields back: Gemini's thought signatures), with the id filled
// in and the arguments as text; the key is redacted from all of it. A call without a function or
// a function name makes the whole reply malformed (retryable, as any malformed reply).
void read_tool_calls(const json& message, const Secrets& api_key, ChatResult& out) {
  const auto calls = message.find("tool_calls");
  if (calls == message.end() || !calls->is_array() || calls->empty()) return;
  json wire = json::array();
  std::set<std::string> ids;
  for (size_t i = 0; i < calls->size(); ++i) {
    json c = (*calls)[i];
    const auto fn = c.is_object() ? c.find("function") : c.end();
    if (!c.is_object() || fn == c.end() || !fn->is_object())
      throw ResponseError("malformed response: tool_calls[" + std::to_string(i) +
                          "] has no function");
    ToolCall call;
    call.id = without_nul(redacted(string_or_empty(c, "id"), api_key));
    if (call.id.empty() || !ids.insert(call.id).second) {
      call.id = made_up_call_id();
      ids.insert(call.id);
    }
    call.name = without_nul(redacted(string_or_empty(*fn, "name"), api_key));
    if (call.name.empty())
      throw ResponseError("malformed response: tool_calls[" + std::to_string(i) +
                          "] has no function name");
    const auto args = fn->find("arguments");
    if (args == fn->end() || args->is_null() ||
        (args->is_string() && args->get_ref<const std::string&>().empty()))
      call.arguments = "{}";
    else
      call.arguments = without_nul(
          redacted(args->is_string() ? args->get<std::string>() : args->dump(), api_key));
    c["id"] = call.id;
    c["type"] = "function";
    (*fn)["name"] = call.name;
    (*fn)["arguments"] = call.arguments;
    wire.push_back(std::move(c));
    out.tool_calls.push_back(std::move(call));
  }
  out.tool_calls_json =
      redacted(wire.dump(-1, ' ', false, json::error_handler_t::replace), api_key);
}

}  // namespace

ChatResult parse_success(const HttpResponse& r, const Secrets& api_key, bool tools_offered) {
  if (nesting_depth(r.body, kMaxJsonDepth) > kMaxJsonDepth)
    throw ResponseError("malformed response: JSON nested deeper than " +
                        std::to_string(kMaxJsonDepth) + " levels (" +
                        std::to_string(r.body.size()) + " bytes)");
  const json body = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object())
    throw ResponseError("malformed response: body is not a JSON object (" +
                        std::to_string(r.body.size()) + " bytes)");
  // Some servers answer 200 with an error object: its own status when its code is one
  // (OpenRouter's {"error": {"code": 402, …}}), else a 500.
  if (body.contains("error") && !body.contains("choices"))
    throw_api_error(HttpResponse{status_in_body(body), r.headers, r.body}, api_key,
                    /*in_success_body=*/true);
  const auto choices = body.find("choices");
  if (choices == body.end() || !choices->is_array() || choices->empty() ||
      !(*choices)[0].is_object())
    throw ResponseError("malformed response: no choices");
  const json& choice = (*choices)[0];
  const auto message = choice.find("message");
  if (message == choice.end() || !message->is_object())
    throw ResponseError("malformed response: choices[0] has no message");

  ChatResult out;
  out.http_status = r.status;
  // Any server text may echo the key (some gateways do): redacted before it is stored.
  out.content = redacted(content_text(*message), api_key);
  out.finish_reason = redacted(string_or_empty(choice, "finish_reason"), api_key);
  if (tools_offered) read_tool_calls(*message, api_key, out);
  out.model = redacted(string_or_empty(body, "model"), api_key);
  out.usage = read_usage(body);
  if (out.content.empty() && out.tool_calls.empty()) {
    // Withheld, not empty: another try would be filtered or refused again.
    const auto field = message->find("refusal");  // a string; `false` or an object is none
    const std::string refusal = field != message->end() && field->is_string()
                                    ? redacted(without_nul(field->get<std::string>()), api_key)
                                    : std::string();
    if (!refusal.empty())
      throw ReplyWithheldError("the model refused: " + clip(refusal), "refusal", out);
    if (out.finish_reason == "content_filter")
      throw ReplyWithheldError(
          "the provider's content filter withheld the reply (finish_reason 'content_filter')",
          "content_filter", out);
  }
  if (out.content.empty() && out.tool_calls.empty())
    throw ResponseError("the reply has no text (finish_reason '" + out.finish_reason +
                            "'; tool calls and empty replies are not answers)",
                        "empty_reply", out);
  return out;
}

namespace {

// The widest vector accepted (OpenAI's largest model has 3 072 dimensions).
constexpr size_t kMaxDimensions = 16384;

std::vector<float> read_vector(const json& item) {
  const auto e = item.find("embedding");
  if (e == item.end() || !e->is_array() || e->empty() || e->size() > kMaxDimensions)
    throw ResponseError("malformed embeddings: an item has no embedding array of 1 to " +
                        std::to_string(kMaxDimensions) + " numbers");
  std::vector<float> v;
  v.reserve(e->size());
  for (const json& x : *e) {
    if (!x.is_number() || !std::isfinite(x.get<double>()) ||
        std::fabs(x.get<double>()) > std::numeric_limits<float>::max())
      throw ResponseError("malformed embeddings: a value is not a finite float");
    v.push_back(x.get<float>());
  }
  return v;
}

}  // namespace

EmbeddingResult parse_embeddings(const HttpResponse& r, size_t inputs, const Secrets& api_key) {
  const json body = parse_bounded(r.body);
  if (body.is_discarded() || !body.is_object())
    throw ResponseError("malformed embeddings: body is not a JSON object (" +
                        std::to_string(r.body.size()) + " bytes)");
  if (body.contains("error") && !body.contains("data"))
    throw_api_error(HttpResponse{500, r.headers, r.body}, api_key, /*in_success_body=*/true);
  const auto data = body.find("data");
  if (data == body.end() || !data->is_array() || data->size() != inputs)
    throw ResponseError("malformed embeddings: expected " + std::to_string(inputs) +
                        " items in data");
  EmbeddingResult out;
  out.vectors.resize(inputs);
  for (size_t i = 0; i < data->size(); ++i) {
    const json& item = (*data)[i];
    if (!item.is_object()) throw ResponseError("malformed embeddings: an item is not an object");
    // Items carry their input's index; servers that omit it answer in order.
    const auto at = item.find("index");
    const size_t index = at != item.end() && at->is_number_unsigned() ? at->get<size_t>() : i;
    if (index >= inputs || !out.vectors[index].empty())
      throw ResponseError("malformed embeddings: a bad or repeated index");
    out.vectors[index] = read_vector(item);
  }
  for (const auto& v : out.vectors)
    if (v.size() != out.vectors.front().size())
      throw ResponseError("malformed embeddings: vectors of different sizes");
  out.usage = read_usage(body);
  return out;
}

}  // namespace autonous::openai
