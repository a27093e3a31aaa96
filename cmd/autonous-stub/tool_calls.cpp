#include "cmd/autonous-stub/tool_calls.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace autonous::stub {
namespace {

std::string text_of(const json& m) {
  return m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
}

bool offers(const json& body) {
  return body.contains("tools") && body["tools"].is_array() && !body["tools"].empty() &&
         body.value("tool_choice", json("auto")) != json("none");
}

std::set<std::string> offered_names(const json& body) {
  std::set<std::string> out;
  for (const auto& t : body["tools"])
    if (t.is_object() && t.contains("function") && t["function"].is_object())
      out.insert(t["function"].value("name", ""));
  return out;
}

json call(const std::string& name, const json& args, size_t index) {
  return {{"id", "call_stub_" + std::to_string(index)},
          {"type", "function"},
          {"function", {{"name", name}, {"arguments", args.dump()}}}};
}

// The directives `[[stub:TAG:NAME]]` / `[[stub:TAG:NAME:{json}]]` in `text`, as calls.
json directive_calls(const std::string& text, const std::string& tag) {
  json calls = json::array();
  const std::string open = "[[stub:" + tag + ":";
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
    const size_t close = text.find("]]", at);
    if (close == std::string::npos) break;
    const std::string inside = text.substr(at + open.size(), close - at - open.size());
    const size_t colon = inside.find(':');
    const std::string name = inside.substr(0, colon);
    json args = json::object();
    if (colon != std::string::npos) {
      // The JSON may hold "]]": take it up to the last "}" before the next directive.
      const size_t end = text.find("}]]", at);
      const std::string raw =
          text.substr(at + open.size() + colon + 1,
                      end == std::string::npos ? 0 : end + 1 - (at + open.size() + colon + 1));
      args = json::parse(raw, nullptr, false);
      if (args.is_discarded()) args = json::object();
    }
    calls.push_back(call(name, args, calls.size()));
  }
  return calls;
}

// `[[stub:tool-many:NAME:COUNT:BYTES]]`: COUNT calls of NAME in one reply, each with arguments
// {"q": BYTES letters} (a model that asks for too much at once).
json many_calls(const std::string& text) {
  json calls = json::array();
  const std::string open = "[[stub:tool-many:";
  const size_t at = text.find(open);
  if (at == std::string::npos) return calls;
  const size_t close = text.find("]]", at);
  if (close == std::string::npos) return calls;
  const std::string inside = text.substr(at + open.size(), close - at - open.size());
  const size_t c1 = inside.find(':');
  const size_t c2 = c1 == std::string::npos ? c1 : inside.find(':', c1 + 1);
  if (c2 == std::string::npos) return calls;
  const std::string name = inside.substr(0, c1);
  const int count = std::atoi(inside.substr(c1 + 1, c2 - c1 - 1).c_str());
  const size_t bytes = static_cast<size_t>(std::atol(inside.substr(c2 + 1).c_str()));
  for (int i = 0; i < count && i < 1000; ++i)
    calls.push_back(
        call(name, {{"q", std::string(std::min<size_t>(bytes, 1u << 20), 'x')}}, calls.size()));
  return calls;
}

bool ends_with_tool_results(const json& messages) {
  return !messages.empty() && messages.back().value("role", "") == "tool";
}

}  // namespace

std::optional<json> tool_reply(const json& body, const std::string& last_user) {
  if (!offers(body)) return std::nullopt;
  const json& messages = body["messages"];
  json calls = directive_calls(last_user, "tool-loop");
  if (calls.empty() && !ends_with_tool_results(messages)) calls = many_calls(last_user);
  if (calls.empty() && !ends_with_tool_results(messages)) {
    calls = directive_calls(last_user, "tool");
    if (calls.empty()) {
      for (const std::string& name : offered_names(body)) {
        if (!name.empty() && last_user.find(name) != std::string::npos) {
          calls.push_back(call(name, {{"query", last_user}}, calls.size()));
          break;
        }
      }
    }
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

std::optional<std::string> after_tool_results(const json& messages, const std::string& last_user) {
  if (!ends_with_tool_results(messages)) return std::nullopt;
  // The names of the calls the results answer, from the assistant message before them.
  size_t i = messages.size();
  while (i > 0 && messages[i - 1].value("role", "") == "tool") --i;
  std::map<std::string, std::string> names;
  if (i > 0 && messages[i - 1].contains("tool_calls") && messages[i - 1]["tool_calls"].is_array())
    for (const auto& c : messages[i - 1]["tool_calls"])
      names[c.value("id", "")] = c.contains("function") ? c["function"].value("name", "") : "";
  std::string said;
  for (size_t j = i; j < messages.size(); ++j) {
    const std::string id = messages[j].value("tool_call_id", "");
    const std::string result = text_of(messages[j]);
    said += (said.empty() ? "" : "; ") + std::string("tool ") + names[id] +
            " said: " + result.substr(0, 160);
  }
  return "reply to: " + last_user + " (" + said + ")";
}

bool is_tool_path(const Request& req) { return req.path.rfind("/tool/", 0) == 0; }

namespace {

// /tool/together: answers "together" when three of its calls are in flight at once (within
// 3 s), "alone" otherwise: calls run one after another never meet.
std::string meet() {
  static std::mutex mu;
  static std::condition_variable cv;
  static int waiting = 0;
  static int generation = 0;
  std::unique_lock lock(mu);
  const int mine = generation;
  if (++waiting == 3) {
    waiting = 0;
    ++generation;
    cv.notify_all();
    return "together";
  }
  if (cv.wait_for(lock, std::chrono::seconds(3), [&] { return generation != mine; }))
    return "together";
  --waiting;
  return "alone";
}

}  // namespace

bool serve_tool(int fd, const Request& req) {
  const std::string name = req.path.substr(6);
  if (name == "echo") {
    const json args = json::parse(req.body, nullptr, false);
    return send_all(fd,
                    response(200, json{{"tool", "echo"},
                                       {"arguments", args.is_discarded() ? json(req.body) : args}}
                                      .dump()));
  }
  if (name == "headers") {  // a careless server: its 401 quotes the request's headers
    std::string quoted;
    for (const auto& [k, v] : req.headers) quoted += k + "=" + v + "; ";
    return send_all(fd, response(401, json{{"error", "unauthorized: " + quoted}}.dump()));
  }
  if (name == "fail") return send_all(fd, response(503, "{\"error\":\"tool is down\"}"));
  if (name == "together") return send_all(fd, response(200, meet(), {}, "text/plain"));
  if (name == "badutf8")
    return send_all(fd,
                    response(200, std::string("bad \xff\xfe bytes \xc3", 14), {}, "text/plain"));
  if (name == "hang") {
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return false;
  }
  if (name == "huge") {
    const size_t total = 50u << 20;
    if (!send_all(fd, response_head(200, total, {}, "text/plain"))) return false;
    const std::string chunk(1u << 16, 'x');
    for (size_t sent = 0; sent < total; sent += chunk.size())
      if (!send_all(fd, chunk)) return false;
    return false;
  }
  return send_all(fd, response(404, "{\"error\":\"no such tool\"}"));
}

std::optional<std::string> strict_roles_refusal(const json& messages) {
  const auto refuse = [] {
    return response(400, json{{"error",
                               {{"message",
                                 "Conversation roles must alternate "
                                 "user/assistant/user/assistant/..."},
                                {"type", "invalid_request_error"},
                                {"code", 400}}}}
                             .dump());
  };
  size_t i = 0;
  if (!messages.empty() && messages[0].value("role", "") == "system") i = 1;
  std::string expect = "user";
  while (i < messages.size()) {
    const json& m = messages[i];
    const std::string role = m.value("role", "");
    if (role != expect) return refuse();
    if (role == "assistant" && m.contains("tool_calls") && m["tool_calls"].is_array() &&
        !m["tool_calls"].empty()) {
      std::set<std::string> ids;
      for (const auto& c : m["tool_calls"]) ids.insert(c.value("id", ""));
      size_t j = i + 1;
      for (; j < messages.size() && messages[j].value("role", "") == "tool"; ++j)
        if (ids.erase(messages[j].value("tool_call_id", "")) != 1) return refuse();
      if (!ids.empty()) return refuse();
      i = j;
      expect = "assistant";                           // the model's answer after its tools' results
      if (i == messages.size()) return std::nullopt;  // the results end the request
      continue;
    }
    if (role == "tool") return refuse();
    expect = role == "user" ? "assistant" : "user";
    ++i;
  }
  return std::nullopt;
}

}  // namespace autonous::stub
