#include "cmd/autonous-stub/server.h"

#include <chrono>
#include <exception>
#include <iostream>
#include <thread>

#include <unistd.h>

#include "cmd/autonous-stub/embeddings.h"
#include "cmd/autonous-stub/hostile.h"
#include "cmd/autonous-stub/streams.h"
#include "cmd/autonous-stub/summaries.h"
#include "cmd/autonous-stub/tool_calls.h"

namespace autonous::stub {
namespace {

bool is_chat_completions(const Request& req) {
  const std::string suffix = "/chat/completions";
  return req.method == "POST" && req.path.size() >= suffix.size() &&
         req.path.compare(req.path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_embeddings(const Request& req) {
  const std::string suffix = "/embeddings";
  return req.method == "POST" && req.path.size() >= suffix.size() &&
         req.path.compare(req.path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_chat_request(const json& body) {
  return body.is_object() && body.contains("messages") && body["messages"].is_array();
}

}  // namespace

Server::Server(const Options& options) : options_(options), log_(options.log_path) {}

void Server::serve(int fd) {
  std::string buffer;
  Request req;
  try {
    while (read_request(fd, buffer, req)) {
      if (!handle(fd, req)) break;
    }
  } catch (const std::exception& e) {
    std::cerr << "autonous-stub: " << e.what() << "\n";
  }
  ::close(fd);
}

bool Server::handle(int fd, const Request& req) {
  if (req.method == "GET" && req.path == "/health")
    return send_all(fd, response(200, "{\"ok\":true}"));
  if (is_embeddings(req)) {
    const json body = json::parse(req.body, nullptr, false);
    log_.write(req, body.is_discarded() ? json(req.body) : body, std::nullopt);
    if (options_.latency_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.latency_ms));
    return send_all(fd, embeddings_response(body));
  }
  if (req.method == "POST" && Hooks::is_hook_path(req)) {
    log_.write(req, json(req.body), std::nullopt);  // the raw body: its signature is checked
    return hooks_.serve(fd, req);
  }
  if (req.method == "POST" && is_tool_path(req)) {
    log_.write(req, req.body, std::nullopt);
    return serve_tool(fd, req);
  }
  if (!is_chat_completions(req))
    return send_all(fd, response(404, openai_error("no route " + req.path, "invalid_request_error",
                                                   "not_found")));
  const json body = json::parse(req.body, nullptr, false);
  if (!is_chat_request(body)) {
    log_.write(req, req.body, std::nullopt);
    return send_all(fd, response(400, openai_error("body is not a chat request",
                                                   "invalid_request_error", nullptr)));
  }
  return handle_chat(fd, req, body);
}

std::optional<Fault> Server::fired_fault(const Prompt& prompt, bool summary_request) {
  std::optional<Fault> fault = find_fault(prompt.last_user);
  // sum* faults hit summary requests only; other faults never do.
  if (!fault || is_summary_fault(*fault) != summary_request) return std::nullopt;
  // A summary request's text changes each time: count its faults by directive alone.
  if (!fault_counts_.fires(*fault, summary_request ? std::string() : prompt.last_user))
    return std::nullopt;
  return fault;
}

bool Server::handle_chat(int fd, const Request& req, const json& body) {
  const json& messages = body["messages"];
  const Prompt prompt = read_prompt(messages);
  const bool summary_request = is_summary_request(messages);
  const std::optional<Fault> fault = fired_fault(prompt, summary_request);
  const int64_t cached_chars = prefixes_.remember(prompt.messages);
  log_.write(req, body, fault ? std::optional(fault->directive) : std::nullopt);

  const size_t hidden_chars = static_cast<size_t>(options_.hidden_prompt) * 4;
  const int latency = options_.latency_ms + (fault ? fault_delay_ms(*fault) : 0);
  if (latency > 0) std::this_thread::sleep_for(std::chrono::milliseconds(latency));

  const auto prompt_tokens = static_cast<int64_t>(
      static_cast<double>((prompt.chars + hidden_chars) / 4 + 1) * options_.usage_scale);
  if (!options_.overloaded_model.empty() && body.contains("model") && body["model"].is_string() &&
      body["model"].get<std::string>() == options_.overloaded_model)
    return send_all(fd, response(529, R"({"type":"error","error":{"type":"overloaded_error",)"
                                      R"("message":"Overloaded"}})"));
  if (auto refused = refusal(options_.rules, body, prompt_tokens)) return send_all(fd, *refused);
  if (options_.rules.strict)
    if (auto refused = strict_roles_refusal(messages)) return send_all(fd, *refused);
  ReplyShape shape;
  shape.content =
      summary_request ? stub_summary(prompt.last_user) : chat_content(prompt, messages.size());
  if (!summary_request) {
    if (auto calls = tool_reply(body, prompt.last_user)) {
      shape.content = nullptr;
      shape.tool_calls = std::move(*calls);
      shape.finish = "tool_calls";
    } else if (auto said = after_tool_results(messages, prompt.last_user)) {
      shape.content = *said;
    }
  }
  if (fault) {
    std::optional<bool> answered =
        summary_request ? answer_summary_fault(fd, *fault, shape) : answer_hostile(fd, *fault, req);
    if (!answered && !summary_request) answered = answer_fault(fd, *fault, shape);
    if (answered) return *answered;
  }
  // Ollama past num_ctx: it answers, from the prompt's tail only, and says so only in usage.
  size_t counted_chars = prompt.chars + hidden_chars;
  if (options_.rules.silent_limit && prompt_tokens > *options_.rules.silent_limit)
    counted_chars = static_cast<size_t>(*options_.rules.silent_limit * 4);
  if (wants_stream(body, fault))
    return stream_reply(fd, body,
                        reply_json(body, shape, counted_chars, cached_chars, options_.usage_scale),
                        fault);
  return send_all(fd,
                  reply_response(body, shape, counted_chars, cached_chars, options_.usage_scale));
}

}  // namespace autonous::stub
