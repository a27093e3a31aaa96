#pragma once
// The operator's tool declarations (TOOLS_FILE, #29): HTTP tools and MCP servers, read from one
// JSON file and checked whole before the worker starts, so a typo is an error naming its entry
// and field, never a tool the model cannot call:
//   {"tools": [{"name", "description"?, "parameters"?, "url", "headers"?, "timeout_ms"?}],
//    "mcp_servers": [{"name", "url", "headers"?} | {"name", "command": [argv…], "env"?}]}
// Names follow the wire's function-name rule (1 to 64 of A-Z a-z 0-9 _ -) and are unique across
// the file; URLs are http or https with a host, no user or password and no fragment; header names
// are HTTP tokens, each once, not one the worker sets itself (Host, Content-Length, …), and
// values carry no control characters; `parameters` is a JSON Schema object ("type": "object"
// and "properties" written out when left out). A key given twice in one object, JSON nested over
// 64 levels and invalid JSON (with its line and column) are refused. Tool URLs and
// servers come only from here (a tool result is data, never a source of new tools). Pure: the
// file is read by load_tools_file, parsed by parse_tools_file.

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autonous::tools {

using Headers = std::vector<std::pair<std::string, std::string>>;

// Bounds of a tool's `timeout_ms`, and its default.
inline constexpr std::chrono::milliseconds kMinToolTimeout{100};
inline constexpr std::chrono::milliseconds kMaxToolTimeout{600'000};
inline constexpr std::chrono::milliseconds kDefaultToolTimeout{30'000};

// POST url with the model's arguments object as the JSON body; the response body is the result.
struct HttpTool {
  std::string name;
  std::string description;
  std::string parameters;  // the JSON Schema, serialized compactly
  std::string url;
  Headers headers;  // secrets possibly: never logged, never in an event
  std::chrono::milliseconds timeout = kDefaultToolTimeout;
};

// A Model Context Protocol server: Streamable HTTP (`url`, `headers`) or a child process over
// stdio (`command`, `env`: the whole environment it gets: without PATH in it, `command`[0] must
// be a path, and npx or uvx need HOME).
struct McpServer {
  std::string name;
  std::string url;                   // empty for stdio
  Headers headers;                   // with url only
  std::vector<std::string> command;  // argv, empty for HTTP
  Headers env;                       // with command only
  bool stdio() const noexcept { return !command.empty(); }
};

struct ToolsFile {
  std::vector<HttpTool> tools;
  std::vector<McpServer> mcp_servers;
};

// A bad file: what() names the file, the entry (`tools[2] "lookup"`) and the field at fault.
class ToolsFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses `text`; `source` names it in errors (the path). Throws ToolsFileError.
ToolsFile parse_tools_file(std::string_view text, const std::string& source);
// Reads and parses the file at `path` (at most kMaxToolsFileBytes). Throws ToolsFileError.
ToolsFile load_tools_file(const std::string& path);

inline constexpr size_t kMaxToolsFileBytes = 4u << 20;

// The wire's rule for a function name: 1 to 64 of A-Z a-z 0-9 _ -.
bool valid_tool_name(std::string_view name) noexcept;

}  // namespace autonous::tools
