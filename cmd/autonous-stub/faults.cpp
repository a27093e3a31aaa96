#include "cmd/autonous-stub/faults.h"

#include <cstdlib>

namespace autonous::stub {
namespace {

std::string rate_limited() {
  return openai_error("Rate limit reached", "requests", "rate_limit_exceeded");
}

// The response of a fault answered with fixed text, if `fault` is one.
std::optional<std::string> canned_response(const Fault& fault) {
  const std::string& k = fault.kind;
  const std::string& a = fault.arg;
  if (k == "429")
    return response(429, rate_limited(), a.empty() ? Headers{} : Headers{{"Retry-After", a}});
  if (k == "429ms") return response(429, rate_limited(), {{"retry-after-ms", a}});
  if (k == "429date") {
    const auto retry = Clock::now() + std::chrono::seconds(std::stoi(a));
    return response(429, rate_limited(), {{"Retry-After", http_date(retry)}});
  }
  if (k == "overflow")
    return response(400, openai_error("This model's maximum context length is 8192 tokens.",
                                      "invalid_request_error", "context_length_exceeded"));
  if (k == "vagueoverflow")  // an overflow in a wording no table knows (a plain 400)
    return response(400, "Input is too long for requested model.", {}, "text/plain");
  if (k == "llama400")
    return response(400, openai_error("llama says no", "invalid_request_error", 400));
  if (k == "html502")
    return response(502, "<html><body><h1>502 Bad Gateway</h1></body></html>", {}, "text/html");
  if (k == "empty500") return response(500, "");
  if (k == "or402")  // OpenRouter out of credits: a numeric code, its own words
    return response(402, R"({"error":{"code":402,"message":"Insufficient credits. Add more )"
                         R"(using https://openrouter.ai/credits"}})");
  if (k == "malformed") return response(200, "{\"choices\": [ {\"message\": ");
  return std::nullopt;
}

// The faults that only change the normal reply.
void reshape(const std::string& kind, const std::string& arg, ReplyShape& shape) {
  if (kind == "null") shape.content = nullptr;
  if (kind == "usage") shape.prompt_tokens = std::stoll(arg);
  if (kind == "length") shape.finish = "length";
  if (kind == "nousage") shape.usage = false;
  if (kind == "chunked") shape.chunked = true;
  if (kind == "filtered") {  // Azure's and Gemini's content filter: no text at all
    shape.content = nullptr;
    shape.finish = "content_filter";
  }
  if (kind == "refusal") {  // OpenAI's refusal field, the content null
    shape.content = nullptr;
    shape.refusal = "I'm sorry, I can't help with that.";
  }
  if (kind == "deepseek") shape.deepseek_cache = true;
}

}  // namespace

std::optional<Fault> find_fault(const std::string& text) {
  const auto start = text.find("[[stub:");
  if (start == std::string::npos) return std::nullopt;
  const auto end = text.find("]]", start);
  if (end == std::string::npos) return std::nullopt;
  Fault f;
  f.directive = text.substr(start, end + 2 - start);
  std::string spec = text.substr(start + 7, end - start - 7);
  if (const auto star = spec.find('*'); star != std::string::npos) {
    f.times = std::stoi(spec.substr(star + 1));
    spec = spec.substr(0, star);
  }
  if (const auto colon = spec.find(':'); colon != std::string::npos) {
    f.arg = spec.substr(colon + 1);
    spec = spec.substr(0, colon);
  }
  f.kind = spec;
  return f;
}

bool FaultCounter::fires(const Fault& fault, const std::string& text) {
  const std::lock_guard lock(mu_);
  const std::string key = fault.directive + "|" + text;
  if (fault.kind == "down") {  // an outage window from the first request of this message
    const auto first = first_seen_.try_emplace(key, Clock::now()).first->second;
    return Clock::now() - first < std::chrono::seconds(std::stoi(fault.arg));
  }
  int& count = counts_[key];
  const bool fire = !fault.times || count < *fault.times;
  ++count;
  return fire;
}

int fault_delay_ms(const Fault& fault) {
  return fault.kind == "slow" || fault.kind == "sumslow" ? std::stoi(fault.arg) : 0;
}

std::optional<bool> answer_fault(int fd, const Fault& fault, ReplyShape& shape) {
  const std::string& k = fault.kind;
  if (auto canned = canned_response(fault)) return send_all(fd, *canned);
  if (k == "truncated") {
    send_all(fd, response_head(200, 500) + "{\"id\":\"x\",\"choices\":[");
    return false;
  }
  if (k == "drop") return false;
  if (k == "hang") {
    const auto seconds = fault.arg.empty() ? 86400 : std::stoi(fault.arg);
    if (wait_for_peer_close(fd, Clock::now() + std::chrono::seconds(seconds))) return false;
  }
  reshape(k, fault.arg, shape);
  // A numeric KIND (400 … 503): an OpenAI-shaped error with that status.
  const int status = std::atoi(k.c_str());
  if (status >= 400)
    return send_all(fd, response(status, openai_error("stub fault " + k, "server_error", nullptr)));
  return std::nullopt;
}

}  // namespace autonous::stub
