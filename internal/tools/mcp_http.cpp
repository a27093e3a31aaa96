#include "internal/tools/mcp_http.h"

#include <nlohmann/json.hpp>

namespace autonous::tools {

using nlohmann::json;

std::vector<json> sse_messages(std::string_view body) {
  std::vector<json> out;
  std::string data;
  const auto flush = [&] {
    if (data.empty()) return;
    json m = json::parse(data, nullptr, /*allow_exceptions=*/false);
    if (!m.is_discarded()) out.push_back(std::move(m));
    data.clear();
  };
  size_t at = 0;
  while (at <= body.size()) {
    size_t end = body.find('\n', at);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      flush();
    } else if (line.rfind("data:", 0) == 0) {
      std::string_view v = line.substr(5);
      if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      if (!data.empty()) data += '\n';
      data += v;
    }
    if (end == body.size()) break;
    at = end + 1;
  }
  flush();
  return out;
}

McpHttp::McpHttp(std::string server, std::string url, Headers headers, HttpPost post,
                 size_t max_body_bytes)
    : server_(std::move(server)),
      url_(std::move(url)),
      headers_(std::move(headers)),
      post_(std::move(post)),
      max_body_bytes_(max_body_bytes) {}

HttpAnswer McpHttp::post(const json& message, std::chrono::milliseconds timeout,
                         const std::function<bool()>& keep_going) {
  HttpCall call;
  call.url = url_;
  call.headers = headers_;
  call.headers.emplace_back("Content-Type", "application/json");
  call.headers.emplace_back("Accept", "application/json, text/event-stream");
  if (!session_.empty()) {
    call.headers.emplace_back("Mcp-Session-Id", session_);
    call.headers.emplace_back("MCP-Protocol-Version", kMcpProtocolVersion);
  }
  call.body = message.dump(-1, ' ', false, json::error_handler_t::replace);
  call.timeout = timeout;
  call.max_body_bytes = max_body_bytes_;
  call.keep_going = keep_going;
  HttpAnswer a;
  try {
    a = post_(call);
  } catch (const HttpCallError& e) {
    throw McpError(server_ + ": " + e.what());
  }
  if (a.status == 404 && !session_.empty()) {
    session_.clear();
    throw McpServerExited(server_ + ": the server forgot the session");
  }
  if (a.status < 200 || a.status >= 300)
    throw McpError(server_ + ": HTTP " + std::to_string(a.status) + ": " + a.body.substr(0, 300));
  return a;
}

void McpHttp::send(const json& message) { post(message, kMcpStartTimeout, {}); }

json McpHttp::exchange(const json& request, std::chrono::milliseconds timeout,
                       const std::function<bool()>& keep_going, const OnMessage& on_message) {
  const HttpAnswer a = post(request, timeout, keep_going);
  if (request.value("method", "") == "initialize") {
    const std::string id = a.header("mcp-session-id");
    if (!id.empty()) session_ = id;
  }
  const json id = request.contains("id") ? request["id"] : json();
  if (id.is_null()) return nullptr;
  std::vector<json> messages;
  if (a.header("content-type").find("text/event-stream") != std::string::npos) {
    messages = sse_messages(a.body);
  } else {
    json m = json::parse(a.body, nullptr, /*allow_exceptions=*/false);
    if (m.is_array())
      for (auto& x : m) messages.push_back(std::move(x));
    else if (!m.is_discarded())
      messages.push_back(std::move(m));
  }
  json answer;
  for (json& m : messages) {
    if (m.is_object() && m.contains("id") && m["id"] == id && !m.contains("method"))
      answer = std::move(m);
    else if (on_message)
      on_message(m);
  }
  if (answer.is_null()) throw McpError(server_ + ": no answer to " + request.value("method", ""));
  return answer;
}

}  // namespace autonous::tools
