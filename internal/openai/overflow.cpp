#include "internal/openai/overflow.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <iterator>
#include <limits>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace autonous::openai {
namespace {

using nlohmann::json;

// At most this much of each text is searched: overflow messages are short, a proxy's page is not
// (and std::regex must not walk megabytes).
constexpr size_t kMaxText = 4096;
// JSON nested deeper than this is dropped while parsing, never built: a hostile body cannot make
// a deep tree. Errors sit at depth 1 or 2.
constexpr int kMaxDepth = 8;
// How many times a message that is itself JSON is opened (Ollama puts llama.cpp's whole error
// body in its "error" string; Gemini's proxies put theirs in "message").
constexpr int kMaxUnwrap = 2;

// Phrases that name a context overflow, lower case.
constexpr std::string_view kOverflowSigns[] = {
    "maximum context length",   // OpenAI, Azure, vLLM, DeepSeek, OpenRouter
    "context_length_exceeded",  // OpenAI's code, echoed
    "context length exceeded",
    "context window of this model",                  // OpenAI (gpt-4.1 and later)
    "please reduce the length of the messages",      // Groq
    "prompt is too long",                            // Anthropic
    "exceed context limit",                          // Anthropic, input + max_tokens
    "exceeds the maximum number of tokens allowed",  // Gemini
    "too large for model with",                      // Mistral
    "exceeds the available context size",            // llama.cpp (and Ollama through it)
    "maximum prompt length",                         // vLLM --max-prompt-length
    "greater than the context length",               // LM Studio
    "when context the overflows",                    // LM Studio (sic)
    "cannot truncate prompt with n_keep",            // LM Studio
    "exceeded max context length",                   // Ollama
    "exceeds the context length",                    // Ollama
    "`inputs` tokens + `max_new_tokens`",            // TGI
    "`inputs` must have less than",                  // TGI
};

// Words of an answer that may be an overflow in a wording not listed above (a 400 or 413 only).
constexpr std::string_view kProbableSigns[] = {"context", "length", "token", "too long"};

// Phrases of rate limits, which also speak of tokens and of "too large" requests (OpenAI's 429
// "Request too large ... tokens per min (TPM)", Groq's 413): never an overflow.
constexpr std::string_view kRateLimitSigns[] = {"rate limit", "rate_limit", "tokens per min",
                                                "per minute", "quota"};

// What the error body says, before it is read for numbers.
struct Said {
  std::string type;
  std::string code;
  std::string message;
  std::string raw;                         // OpenRouter's metadata.raw: the provider's own body
  std::optional<int64_t> n_ctx;            // llama.cpp's window
  std::optional<int64_t> n_prompt_tokens;  // llama.cpp's count
};

// `text` parsed, with what lies deeper than kMaxDepth dropped; discarded when not JSON.
json parse_shallow(std::string_view text) {
  const json::parser_callback_t shallow = [](int depth, json::parse_event_t, json&) {
    return depth <= kMaxDepth;
  };
  return json::parse(text, shallow, /*allow_exceptions=*/false);
}

// A field as text: strings as they are, numbers written out ("code": 400).
std::string text_field(const json& node, const char* key) {
  const auto it = node.find(key);
  if (it == node.end() || it->is_null() || it->is_structured()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// A non-negative integer field that fits an int64; anything else (a float, a number too large
// even for a uint64, which nlohmann keeps as a float) is unset.
std::optional<int64_t> count_field(const json& node, const char* key) {
  const auto it = node.find(key);
  if (it == node.end() || !it->is_number_unsigned()) return std::nullopt;
  const auto v = it->get<uint64_t>();
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return static_cast<int64_t>(v);
}

bool looks_like_json(std::string_view s) {
  const size_t at = s.find_first_not_of(" \t\r\n");
  return at != std::string_view::npos && (s[at] == '{' || s[at] == '[');
}

// The error in `body`: {"error": {...}}, {"error": "..."}, Gemini's [{"error": {...}}], or a
// top-level object with "message" (vLLM's old {"object": "error", ...}). Empty when not JSON.
Said read_said(std::string_view body, int unwrap) {
  Said said;
  const json parsed = parse_shallow(body);
  const json* node = &parsed;
  if (node->is_array() && !node->empty()) node = &(*node)[0];
  if (!node->is_object()) return said;
  if (const auto it = node->find("error"); it != node->end()) {
    if (it->is_string()) said.message = it->get<std::string>();
    if (it->is_object()) node = &*it;
  }
  said.type = text_field(*node, "type");
  said.code = text_field(*node, "code");
  if (said.message.empty()) said.message = text_field(*node, "message");
  said.n_ctx = count_field(*node, "n_ctx");
  said.n_prompt_tokens = count_field(*node, "n_prompt_tokens");
  if (const auto meta = node->find("metadata"); meta != node->end() && meta->is_object())
    said.raw = text_field(*meta, "raw");
  if (unwrap > 0 && looks_like_json(said.message)) {
    Said inner = read_said(said.message, unwrap - 1);
    if (!inner.message.empty()) said.message = std::move(inner.message);
    if (said.type.empty()) said.type = std::move(inner.type);
    if (said.code.empty()) said.code = std::move(inner.code);
    if (!said.n_ctx) said.n_ctx = inner.n_ctx;
    if (!said.n_prompt_tokens) said.n_prompt_tokens = inner.n_prompt_tokens;
  }
  return said;
}

// The start of `s`, lower case: what the phrases and sentences below are matched against.
std::string lower_clipped(std::string_view s) {
  std::string out(s.substr(0, kMaxText));
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

template <size_t N>
bool mentions(const std::string& text, const std::string_view (&signs)[N]) {
  return std::any_of(std::begin(signs), std::end(signs),
                     [&](std::string_view sign) { return text.find(sign) != std::string::npos; });
}

// "128,000" or "128000" as a count; nullopt when it does not fit an int64.
std::optional<int64_t> parse_count(std::string digits) {
  digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
  int64_t v = 0;
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// The numbers a message can state. kRequested: the request's total as the server counted it;
// kPrompt and kCompletion: its parts, when the message splits it.
enum Slot { kLimit, kRequested, kPrompt, kCompletion };

struct Reading {
  std::regex pattern;       // lower case; each capture group is a number
  std::vector<Slot> slots;  // what each group is
};

// The sentences that carry numbers, '#' standing for a whole number ("128,000" or "128000", at
// most 20 digits, so a longer run is no number rather than its tail). For each slot the first
// sentence that matches wins, so the sentences that state several come first.
const std::vector<Reading>& readings() {
  static const std::vector<Reading> all = [] {
    const std::vector<std::pair<std::string, std::vector<Slot>>> table = {
        {R"(context limit: # \+ # > #)", {kPrompt, kCompletion, kLimit}},  // Anthropic
        {R"(must be <= #\. given: # .?inputs.? tokens and #)", {kLimit, kPrompt, kCompletion}},
        {R"(must have less than # tokens\. given: #)", {kLimit, kRequested}},  // TGI
        {R"(too large: #\. this model's maximum context length is # tokens and your request has #)",
         {kCompletion, kLimit, kPrompt}},  // vLLM, max_tokens too large
        {R"(requested # output tokens and your prompt contains at least #)",
         {kCompletion, kPrompt}},
        {R"(maximum context length is #)", {kLimit}},
        {R"(maximum prompt length is #)", {kLimit}},
        {R"(tokens > # maximum)", {kLimit}},
        {R"(maximum number of tokens allowed \(#\))", {kLimit}},
        {R"(too large for model with # maximum)", {kLimit}},
        {R"(available context size \(# tokens\))", {kLimit}},
        {R"(context length of only # tokens)", {kLimit}},
        {R"(n_ctx:? \(?#)", {kLimit}},
        {R"(requested (?:about )?# tokens)", {kRequested}},
        {R"(resulted in # tokens)", {kRequested}},
        {R"(prompt is too long: #)", {kRequested}},
        {R"(input token count \(#\))", {kRequested}},
        {R"(prompt contains # tokens)", {kRequested}},
        {R"(request \(# tokens\))", {kRequested}},
        {R"(n_keep:? \(?#)", {kRequested}},
        {R"(keep the first # tokens)", {kRequested}},
        {R"(\(# (?:in the messages|in your prompt|of text input))", {kPrompt}},
        {R"(request has # (?:input |prompt )?tokens)", {kPrompt}},
        {R"(# (?:in|for) the completion)", {kCompletion}},
        {R"(# in the output)", {kCompletion}},
    };
    std::vector<Reading> out;
    for (const auto& [sentence, slots] : table) {
      std::string pattern;
      for (const char c : sentence)
        pattern += c == '#' ? R"(\b(\d{1,3}(?:,\d{3}){1,6}|\d{1,20})\b)" : std::string(1, c);
      out.push_back({std::regex(pattern), slots});
    }
    return out;
  }();
  return all;
}

Overflow read_numbers(const std::string& text) {
  std::array<std::optional<int64_t>, 4> got;
  for (const Reading& r : readings()) {
    std::smatch m;
    if (!std::regex_search(text, m, r.pattern)) continue;
    for (size_t i = 0; i < r.slots.size(); ++i)
      if (!got[r.slots[i]]) got[r.slots[i]] = parse_count(m[i + 1].str());
  }
  const auto& prompt = got[kPrompt];
  const auto& completion = got[kCompletion];
  Overflow o;
  o.limit = got[kLimit];
  o.requested = got[kRequested];
  if (!o.requested && prompt && completion &&
      *completion <= std::numeric_limits<int64_t>::max() - *prompt)
    o.requested = *prompt + *completion;
  if (!o.requested) o.requested = prompt;
  if (prompt && (completion || got[kRequested])) o.prompt = prompt;
  return o;
}

}  // namespace

std::optional<Overflow> read_overflow(long status, std::string_view body, std::string_view type,
                                      std::string_view code, std::string_view message) {
  const Said said = read_said(body, kMaxUnwrap);
  const std::string_view the_type = type.empty() ? std::string_view(said.type) : type;
  const std::string_view the_code = code.empty() ? std::string_view(said.code) : code;
  // The body's own message first (the caller's may be clipped), then the caller's, then what a
  // router passed on; the raw body when it held no message (plain text from a proxy, or JSON of
  // another shape).
  std::string text =
      lower_clipped(said.message) + "\n" + lower_clipped(message) + "\n" + lower_clipped(said.raw);
  if (said.message.empty()) text += "\n" + lower_clipped(body);

  const bool marked =
      the_code == "context_length_exceeded" || the_type == "exceed_context_size_error";
  bool probable = false;
  if (!marked) {
    if (status != 400 && status != 413 && status != 422) return std::nullopt;
    if (the_code == "rate_limit_exceeded" || mentions(text, kRateLimitSigns)) return std::nullopt;
    if (!mentions(text, kOverflowSigns)) {
      // Only what the error says: its message, or a plain-text body (not a proxy's HTML page).
      const size_t first = body.find_first_not_of(" \t\r\n");
      const bool html = first != std::string_view::npos && body[first] == '<';
      const std::string said_text =
          lower_clipped(said.message) + "\n" + lower_clipped(message) + "\n" +
          (said.message.empty() && message.empty() && !html ? lower_clipped(body) : "");
      if ((status != 400 && status != 413) || !mentions(said_text, kProbableSigns))
        return std::nullopt;
      probable = true;
    }
  }
  Overflow o = read_numbers(text);
  o.probable = probable;
  if (said.n_ctx) o.limit = said.n_ctx;
  if (said.n_prompt_tokens) o.requested = said.n_prompt_tokens;
  return o;
}

}  // namespace autonous::openai
