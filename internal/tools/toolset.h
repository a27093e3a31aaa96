#pragma once
// Toolset: the tools a worker offers the model (#29): the declared HTTP tools and the tools of
// the MCP servers that started, as a chat request's `tools` (OpenAI's function shape:
// {"type": "function", "function": {"name", "description", "parameters"}}), each looked up by
// name when the model calls it. Names are unique across sources: a later tool of an earlier
// name, or an MCP tool whose name the wire does not take (1 to 64 of A-Z a-z 0-9 _ -), is left
// out with a warning. An MCP server's list is read again when it says it changed. Thread-safe;
// shared by the worker's slots.

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "internal/tools/tools_file.h"

namespace autonous::tools {

class McpClient;

struct OfferedTool {
  std::string name;
  std::string description;
  std::string parameters;          // JSON Schema text
  const HttpTool* http = nullptr;  // an HTTP tool, or
  McpClient* mcp = nullptr;        // an MCP server's
  std::chrono::milliseconds timeout{30'000};
};

class Toolset {
 public:
  using Warn = std::function<void(const std::string&)>;
  Toolset() = default;
  Toolset(std::vector<HttpTool> http, std::vector<std::shared_ptr<McpClient>> mcp = {},
          Warn warn = {});
  ~Toolset();

  bool empty() const;
  // The request's `tools` array as JSON text, of the tools named in `only` when given (a chat's
  // own list: `chat set --tools`); "" when there are none.
  std::string offered(const std::optional<std::vector<std::string>>& only = std::nullopt) const;
  // The tool named `name`, when `only` (if given) names it too; nullopt for a name the model
  // made up or a tool not offered to the chat.
  std::optional<OfferedTool> find(
      std::string_view name,
      const std::optional<std::vector<std::string>>& only = std::nullopt) const;
  std::vector<std::string> names() const;
  // "http" or "mcp:<server>" per tool, in the order offered.
  std::vector<std::string> sources() const;

 private:
  void rebuild() const;  // with mu_ held
  void refresh() const;  // reads changed MCP lists again
  std::string join(const std::vector<std::string>& entries,
                   const std::vector<std::string>* only) const;

  std::vector<HttpTool> http_;
  std::vector<std::shared_ptr<McpClient>> mcp_;
  Warn warn_;
  mutable std::mutex mu_;
  mutable std::vector<OfferedTool> tools_;
  mutable std::vector<std::string> entries_;  // each tool's entry in `tools`, as tools_
  mutable std::string offered_;               // all of them
};

}  // namespace autonous::tools
