#pragma once
// McpStdio: an MCP server as a child process (#29), newline-delimited JSON-RPC on its stdin and
// stdout; its stderr (the server's log) is discarded. It gets exactly the environment the file
// gives it (`env`), nothing of the worker's; `command[0]` without a '/' is looked up in that
// environment's PATH. A child that exits is started again on the next exchange (which then
// fails: the session must be initialized again, McpClient does so). The destructor closes its
// stdin, waits a moment, then kills it. Writes never raise SIGPIPE (the worker ignores it).

#include <string>
#include <vector>

#include <sys/types.h>

#include "internal/tools/mcp_client.h"

namespace autonous::tools {

// A line over this many bytes from the server is an error (the session starts again).
inline constexpr size_t kMaxMcpLineBytes = 64u << 20;

class McpStdio final : public McpChannel {
 public:
  // Starts the child. Throws McpError when it cannot (no such program, fork failed).
  McpStdio(std::string server, std::vector<std::string> command, Headers env);
  ~McpStdio() override;
  McpStdio(const McpStdio&) = delete;
  McpStdio& operator=(const McpStdio&) = delete;

  nlohmann::json exchange(const nlohmann::json& request, std::chrono::milliseconds timeout,
                          const std::function<bool()>& keep_going,
                          const OnMessage& on_message) override;
  void send(const nlohmann::json& message) override;
  pid_t pid() const noexcept { return pid_; }

 private:
  void spawn();
  void stop();
  void write_line(const std::string& line);

  std::string server_;
  std::vector<std::string> command_;
  Headers env_;
  std::string path_;  // command_[0] resolved
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string buffer_;
};

}  // namespace autonous::tools
