#include "internal/tools/mcp_client.h"

#include <nlohmann/json.hpp>

namespace autonous::tools {
namespace {

using nlohmann::json;

// A tools/call result's content as text: text parts as they are, other parts named.
std::string content_text(const json& result) {
  std::string out;
  if (result.contains("content") && result["content"].is_array()) {
    for (const auto& part : result["content"]) {
      if (!part.is_object()) continue;
      const std::string type = part.value("type", "");
      std::string piece;
      if (type == "text" && part.contains("text") && part["text"].is_string())
        piece = part["text"].get<std::string>();
      else if (type == "resource" && part.contains("resource") && part["resource"].is_object() &&
               part["resource"].contains("text") && part["resource"]["text"].is_string())
        piece = part["resource"]["text"].get<std::string>();
      else if (type == "resource_link")
        piece = "[resource " + part.value("uri", std::string("?")) + "]";
      else
        piece = "[" + (type.empty() ? std::string("content") : type) + " not shown]";
      out += (out.empty() ? "" : "\n") + piece;
    }
  }
  if (out.empty() && result.contains("structuredContent"))
    out = result["structuredContent"].dump(-1, ' ', false, json::error_handler_t::replace);
  return prompt_text(out);
}

}  // namespace

McpClient::McpClient(std::string server, std::unique_ptr<McpChannel> channel)
    : server_(std::move(server)), channel_(std::move(channel)) {}

McpClient::~McpClient() = default;

void McpClient::on_message(const json& m) {
  if (!m.is_object()) return;
  const auto method = m.find("method");
  if (method != m.end() && method->is_string() &&
      method->get<std::string>() == "notifications/tools/list_changed")
    changed_ = true;
  // A request of the server's (it has an id and a method): this client offers none.
  if (m.contains("method") && m.contains("id"))
    channel_->send({{"jsonrpc", "2.0"},
                    {"id", m["id"]},
                    {"error", {{"code", -32601}, {"message", "method not found"}}}});
}

json McpClient::request(const std::string& method, json params, std::chrono::milliseconds timeout,
                        const std::function<bool()>& keep_going) {
  json req = {{"jsonrpc", "2.0"}, {"id", next_id_++}, {"method", method}};
  if (!params.is_null()) req["params"] = std::move(params);
  const json answer =
      channel_->exchange(req, timeout, keep_going, [this](const json& m) { on_message(m); });
  if (!answer.is_object()) throw McpError(server_ + ": " + method + ": no answer");
  if (answer.contains("error")) {
    const json& e = answer["error"];
    const std::string message = e.is_object() && e.contains("message") && e["message"].is_string()
                                    ? e["message"].get<std::string>()
                                    : e.dump();
    throw McpError(server_ + ": " + method + ": " + prompt_text(message));
  }
  if (!answer.contains("result") || !answer["result"].is_object())
    throw McpError(server_ + ": " + method + ": an answer without a result");
  return answer["result"];
}

void McpClient::start(std::chrono::milliseconds timeout) {
  const std::lock_guard lock(mu_);
  initialize(timeout);
}

void McpClient::initialize(std::chrono::milliseconds timeout) {
  const json result = request("initialize",
                              {{"protocolVersion", kMcpProtocolVersion},
                               {"capabilities", json::object()},
                               {"clientInfo", {{"name", "autonous"}, {"version", "1"}}}},
                              timeout, {});
  if (!result.contains("capabilities") || !result["capabilities"].is_object() ||
      !result["capabilities"].contains("tools"))
    throw McpError(server_ + ": the server offers no tools");
  channel_->send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  std::vector<McpTool> listed = list(timeout);
  const std::lock_guard cache(cache_mu_);
  tools_ = std::move(listed);
  changed_ = false;
}

std::vector<McpTool> McpClient::list(std::chrono::milliseconds timeout) {
  std::vector<McpTool> out;
  json cursor;
  for (int page = 0; page < 100; ++page) {
    json params = json::object();
    if (!cursor.is_null()) params["cursor"] = cursor;
    const json result = request("tools/list", params, timeout, {});
    if (!result.contains("tools") || !result["tools"].is_array())
      throw McpError(server_ + ": tools/list: no tools array");
    for (const auto& t : result["tools"]) {
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) continue;
      McpTool tool;
      tool.name = t["name"].get<std::string>();
      tool.description = t.contains("description") && t["description"].is_string()
                             ? prompt_text(t["description"].get<std::string>())
                             : "";
      json schema = t.contains("inputSchema") && t["inputSchema"].is_object()
                        ? t["inputSchema"]
                        : json{{"type", "object"}};
      schema.erase("$schema");
      if (!schema.contains("properties")) schema["properties"] = json::object();
      tool.input_schema = schema.dump(-1, ' ', false, json::error_handler_t::replace);
      out.push_back(std::move(tool));
    }
    if (!result.contains("nextCursor") || result["nextCursor"].is_null()) return out;
    cursor = result["nextCursor"];
  }
  throw McpError(server_ + ": tools/list: more than 100 pages");
}

std::vector<McpTool> McpClient::tools() {
  // Busy with a call (30 s at most): the list as last read; the change is read at a later
  // refresh. Every slot's request waits on the toolset meanwhile, so this never waits long.
  std::unique_lock lock(mu_, std::defer_lock);
  if (!lock.try_lock_for(std::chrono::milliseconds(100))) return cached();
  if (changed_.exchange(false)) {
    std::vector<McpTool> listed = list(kMcpStartTimeout);  // throws: the last list stays
    const std::lock_guard cache(cache_mu_);
    tools_ = std::move(listed);
  }
  return cached();
}

std::vector<McpTool> McpClient::cached() const {
  const std::lock_guard cache(cache_mu_);
  return tools_;
}

bool McpClient::list_changed() const { return changed_; }

ToolOutcome McpClient::call(const std::string& tool, std::string_view arguments,
                            std::chrono::milliseconds timeout,
                            const std::function<bool()>& keep_going) {
  ToolOutcome out;
  const json args = json::parse(arguments.empty() ? std::string_view("{}") : arguments, nullptr,
                                /*allow_exceptions=*/false);
  if (args.is_discarded() || !args.is_object()) {
    out.content = "error: the arguments are not a JSON object; the tool was not called";
    return out;
  }
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + timeout;
  const auto elapsed = [&] {
    out.latency = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    return out;
  };
  // One request at a time on the server's connection: a call of the same reply waits for the
  // others within its own timeout, and one given up meanwhile (a lost lease, a hard stop) is
  // never sent.
  std::unique_lock lock(mu_, std::defer_lock);
  while (!lock.try_lock_for(std::chrono::milliseconds(50))) {
    if (keep_going && !keep_going()) {
      out.aborted = true;
      out.content = "error: aborted before the call was sent";
      return elapsed();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      out.content = "error: " + server_ + ": timed out waiting for the server's other calls";
      return elapsed();
    }
  }
  if (keep_going && !keep_going()) {
    out.aborted = true;
    out.content = "error: aborted before the call was sent";
    return elapsed();
  }
  // Too little time left to be worth sending (the server would run it, the model see a timeout
  // and maybe call again): given up unsent.
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left < std::min<std::chrono::milliseconds>(std::chrono::seconds(1), timeout / 2)) {
    out.content = "error: " + server_ + ": timed out waiting for the server's other calls";
    return elapsed();
  }
  try {
    const json result =
        request("tools/call", {{"name", tool}, {"arguments", args}}, left, keep_going);
    const std::string text = content_text(result);
    out.bytes = static_cast<int64_t>(text.size());
    const auto is_error = result.find("isError");
    out.ok = is_error == result.end() || !is_error->is_boolean() || !is_error->get<bool>();
    out.content = out.ok ? text : "error: the tool said: " + text;
  } catch (const McpServerExited& e) {
    // Its child was started again: a new session, for the next call (this one is not repeated:
    // the tool may have acted before the server died).
    out.content = std::string("error: ") + e.what() + "; the call was not repeated";
    try {
      initialize(kMcpStartTimeout);  // the lock is still held
      changed_ = true;  // the new session's list may differ: the toolset reads it again
    } catch (const McpError&) {
    } catch (const json::exception&) {
    }
  } catch (const McpError& e) {
    out.content = std::string("error: ") + e.what();
    out.aborted = keep_going && !keep_going();
  } catch (const json::exception& e) {
    // A hostile or broken server's answer of the wrong shape is a result, never a failed task.
    out.content = "error: " + server_ + ": a malformed answer (" + e.what() + ")";
  }
  return elapsed();
}

}  // namespace autonous::tools
