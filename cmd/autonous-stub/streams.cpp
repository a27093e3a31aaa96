#include "cmd/autonous-stub/streams.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace autonous::stub {
namespace {

std::string chunk_frame(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

// The content cut into pieces on UTF-8 boundaries: a word each (slowstream), else about four.
std::vector<std::string> pieces(const std::string& text, bool by_word) {
  std::vector<std::string> out;
  const size_t target = by_word ? 1 : std::max<size_t>(1, text.size() / 4);
  std::string cur;
  for (size_t i = 0; i < text.size(); ++i) {
    cur += text[i];
    const bool boundary =
        i + 1 == text.size() || (static_cast<unsigned char>(text[i + 1]) & 0xC0) != 0x80;
    if (!boundary) continue;
    if ((by_word && text[i] == ' ') || (!by_word && cur.size() >= target)) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

class Sender {
 public:
  Sender(int fd, bool split_utf8) : fd_(fd), split_utf8_(split_utf8) {}
  bool head() {
    return send_all(fd_,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: "
                    "no-cache\r\nTransfer-Encoding: chunked\r\n\r\n");
  }
  bool raw(const std::string& text) {
    const std::string frame = chunk_frame(text);
    if (split_utf8_) {
      // Inside the first multi-byte character, if there is one: two reads on the other side.
      for (size_t i = 0; i < frame.size(); ++i) {
        if ((static_cast<unsigned char>(frame[i]) & 0xC0) == 0xC0) {
          if (!send_all(fd_, frame.substr(0, i + 1))) return false;
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          return send_all(fd_, frame.substr(i + 1));
        }
      }
    }
    return send_all(fd_, frame);
  }
  bool data(const json& chunk) {
    return raw("data: " + chunk.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n");
  }
  bool end() { return raw("data: [DONE]\n\n") && send_all(fd_, "0\r\n\r\n"); }

 private:
  int fd_;
  bool split_utf8_;
};

json chunk_of(const json& reply, const json& delta, const json& finish) {
  return {{"id", reply.value("id", "chatcmpl-stub")},
          {"object", "chat.completion.chunk"},
          {"model", reply.value("model", "stub")},
          {"choices", json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}};
}

}  // namespace

bool wants_stream(const json& body, const std::optional<Fault>& fault) {
  const auto s = body.find("stream");
  return s != body.end() && s->is_boolean() && s->get<bool>() &&
         !(fault && fault->kind == "nostream");
}

bool stream_reply(int fd, const json& body, const json& reply, const std::optional<Fault>& fault) {
  const std::string kind = fault ? fault->kind : "";
  const int gap_ms = kind == "slowstream" ? std::stoi(fault->arg) : 0;
  Sender out(fd, kind == "sse-utf8");
  if (!out.head()) return false;
  const json& message = reply["choices"][0]["message"];
  if (!out.data(chunk_of(reply, {{"role", "assistant"}, {"content", ""}}, nullptr))) return false;
  const std::string content =
      message["content"].is_string() ? message["content"].get<std::string>() : "";
  const std::vector<std::string> parts = pieces(content, gap_ms > 0);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (kind == "sse-empty") {
      if (!out.raw(": keep-alive\n\n") || !out.data(chunk_of(reply, json::object(), nullptr)) ||
          !out.data(chunk_of(reply, {{"content", ""}}, nullptr)))
        return false;
    }
    if (!out.data(chunk_of(reply, {{"content", parts[i]}}, nullptr))) return false;
    if (i == 0 && kind == "sse-error") {
      out.data({{"error",
                 {{"message", "stub: the upstream provider failed mid-stream"},
                  {"type", "server_error"},
                  {"code", 502}}}});
      return out.end();
    }
    if (i == 0 && kind == "sse-break") return false;  // closed: no [DONE]
    if (i == 0 && kind == "sse-hang") {
      wait_for_peer_close(fd, Clock::now() + std::chrono::hours(1));
      return false;
    }
    if (gap_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
  }
  if (message.contains("refusal") && message["refusal"].is_string())
    if (!out.data(chunk_of(reply, {{"refusal", message["refusal"]}}, nullptr))) return false;
  if (message.contains("tool_calls") && message["tool_calls"].is_array()) {
    const json& calls = message["tool_calls"];
    for (size_t i = 0; i < calls.size(); ++i) {
      const json& c = calls[i];
      const std::string args = c["function"].value("arguments", "");
      const size_t half = args.size() / 2;
      if (!out.data(chunk_of(reply,
                             {{"tool_calls",
                               {{{"index", i},
                                 {"id", c.value("id", "")},
                                 {"type", "function"},
                                 {"function",
                                  {{"name", c["function"].value("name", "")},
                                   {"arguments", args.substr(0, half)}}}}}}},
                             nullptr)) ||
          !out.data(chunk_of(
              reply,
              {{"tool_calls", {{{"index", i}, {"function", {{"arguments", args.substr(half)}}}}}}},
              nullptr)))
        return false;
    }
  }
  if (!out.data(chunk_of(reply, json::object(), reply["choices"][0]["finish_reason"])))
    return false;
  const auto opts = body.find("stream_options");
  if (opts != body.end() && opts->is_object() && opts->value("include_usage", false) &&
      reply.contains("usage")) {
    json last = {{"id", reply.value("id", "chatcmpl-stub")},
                 {"object", "chat.completion.chunk"},
                 {"model", reply.value("model", "stub")},
                 {"choices", json::array()},
                 {"usage", reply["usage"]}};
    if (!out.data(last)) return false;
  }
  return out.end();
}

}  // namespace autonous::stub
