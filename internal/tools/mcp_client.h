#pragma once
// McpClient: a Model Context Protocol client (#29; spec revision 2025-06-18) for one server of
// TOOLS_FILE: `initialize` then `notifications/initialized`, `tools/list` (every page, cached,
// read again after the server sends `notifications/tools/list_changed`), `tools/call`. JSON-RPC
// 2.0 over a channel: McpStdio (a child process, newline-delimited JSON) or McpHttp (Streamable
// HTTP: JSON or SSE answers, the session id and protocol version headers). Requests the server
// makes of the client (roots, sampling, elicitation) are answered "method not found".
// Thread-safe: one call at a time per server (a mutex). Whatever goes wrong in a call is a
// result the model reads (tools::ToolOutcome), never an exception.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "internal/tools/http_tool.h"
#include "internal/tools/tools_file.h"

namespace autonous::tools {

inline constexpr const char* kMcpProtocolVersion = "2025-06-18";
// How long initialize and tools/list may take at start.
inline constexpr std::chrono::milliseconds kMcpStartTimeout{15'000};

// No answer from the server: it is down, it timed out, it sent something that is not JSON-RPC.
class McpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The server's process exited or its connection broke (and was started again): McpClient starts
// the session again.
class McpServerExited : public McpError {
 public:
  using McpError::McpError;
};

// One JSON-RPC exchange. `request` has an id: returns the message that answers it (notifications
// and requests that arrive meanwhile go to `on_message`). Without an id: sends and returns null.
class McpChannel {
 public:
  virtual ~McpChannel() = default;
  using OnMessage = std::function<void(const nlohmann::json&)>;
  virtual nlohmann::json exchange(const nlohmann::json& request, std::chrono::milliseconds timeout,
                                  const std::function<bool()>& keep_going,
                                  const OnMessage& on_message) = 0;
  // Sends a message that expects no answer (a notification, a response to the server).
  virtual void send(const nlohmann::json& message) = 0;
};

struct McpTool {
  std::string name;
  std::string description;
  std::string input_schema;  // JSON text
};

class McpClient {
 public:
  McpClient(std::string server, std::unique_ptr<McpChannel> channel);
  ~McpClient();

  // initialize, initialized, tools/list. Throws McpError.
  void start(std::chrono::milliseconds timeout = kMcpStartTimeout);
  // The server's tools (read again first when it said its list changed). Throws McpError.
  std::vector<McpTool> tools();
  // Whether the list changed since tools() last read it. Never waits.
  bool list_changed() const;
  // The list as last read.
  std::vector<McpTool> cached() const;
  ToolOutcome call(const std::string& tool, std::string_view arguments,
                   std::chrono::milliseconds timeout, const std::function<bool()>& keep_going);
  const std::string& server() const noexcept { return server_; }

 private:
  nlohmann::json request(const std::string& method, nlohmann::json params,
                         std::chrono::milliseconds timeout,
                         const std::function<bool()>& keep_going);
  void on_message(const nlohmann::json& m);
  std::vector<McpTool> list(std::chrono::milliseconds timeout);
  void initialize(std::chrono::milliseconds timeout);  // with mu_ held

  std::string server_;
  std::unique_ptr<McpChannel> channel_;
  mutable std::timed_mutex mu_;  // one request at a time; a call waits for it within its timeout
  int64_t next_id_ = 1;
  std::atomic<bool> changed_{false};  // read without mu_ (the toolset asks on every request)
  mutable std::mutex cache_mu_;       // tools_
  std::vector<McpTool> tools_;
};

}  // namespace autonous::tools
