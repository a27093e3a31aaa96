#pragma once
// McpHttp: an MCP server over Streamable HTTP (#29; spec revision 2025-06-18): each message is
// POSTed to the server's url with `Accept: application/json, text/event-stream` and the file's
// headers; the answer is one JSON message or an SSE stream carrying it (other messages in the
// stream go to on_message). The `Mcp-Session-Id` the initialize answer gives is sent on every
// later request, with `MCP-Protocol-Version`; a 404 for a session (the server forgot it) starts
// the session again (McpServerExited). The POST goes through a seam (HttpPost): the worker fills
// it with a curl transport of its own.

#include <string>

#include "internal/tools/mcp_client.h"

namespace autonous::tools {

class McpHttp final : public McpChannel {
 public:
  McpHttp(std::string server, std::string url, Headers headers, HttpPost post,
          size_t max_body_bytes = 16u << 20);

  nlohmann::json exchange(const nlohmann::json& request, std::chrono::milliseconds timeout,
                          const std::function<bool()>& keep_going,
                          const OnMessage& on_message) override;
  void send(const nlohmann::json& message) override;

 private:
  HttpAnswer post(const nlohmann::json& message, std::chrono::milliseconds timeout,
                  const std::function<bool()>& keep_going);

  std::string server_;
  std::string url_;
  Headers headers_;
  HttpPost post_;
  size_t max_body_bytes_;
  std::string session_;
};

// The JSON messages an SSE body carries (each event's data lines joined), in order.
std::vector<nlohmann::json> sse_messages(std::string_view body);

}  // namespace autonous::tools
