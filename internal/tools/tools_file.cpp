#include "internal/tools/tools_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace autonous::tools {
namespace {

using json = nlohmann::json;

// Where an error is: the file and the entry.
struct At {
  const std::string& source;
  std::string entry;  // "" for the top level
  [[noreturn]] void fail(const std::string& what) const {
    throw ToolsFileError(entry.empty() ? fmt::format("{}: {}", source, what)
                                       : fmt::format("{}: {}: {}", source, entry, what));
  }
};

bool has_control(std::string_view s) noexcept {
  for (const unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

void only_keys(const json& object, std::initializer_list<std::string_view> allowed, const At& at) {
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (const std::string_view k : allowed) known = known || key == k;
    if (!known)
      at.fail(fmt::format("unknown field {:?} (known: {})", key, fmt::join(allowed, ", ")));
  }
}

std::string string_field(const json& object, const char* key, const At& at, bool required) {
  const auto it = object.find(key);
  if (it == object.end()) {
    if (required) at.fail(fmt::format("{:?} is missing", key));
    return {};
  }
  if (!it->is_string()) at.fail(fmt::format("{:?} must be a string", key));
  return it->get<std::string>();
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// http(s)://host[:port][/path][?query]: a host (a name, an IPv4 address or a bracketed IPv6
// one), a port from 1 to 65535, no user or password (they would end up in logs: put a secret in
// "headers"), no fragment, no spaces, backslashes or control characters. The URL is not echoed
// in the error: it may hold a secret.
std::string url_field(const json& object, const At& at) {
  std::string url = string_field(object, "url", at, true);
  const std::string scheme = lower(url.substr(0, url.find("://")));
  if (url.find("://") == std::string::npos || (scheme != "http" && scheme != "https"))
    at.fail("\"url\" must be an http:// or https:// URL");
  if (has_control(url) || url.find_first_of(" \\#") != std::string::npos)
    at.fail("\"url\" holds spaces, backslashes, a fragment (#) or control characters");
  const size_t start = url.find("://") + 3;
  const std::string authority = url.substr(start, url.find_first_of("/?", start) - start);
  if (authority.find('@') != std::string::npos)
    at.fail("\"url\" holds a user or password: put credentials in \"headers\"");
  std::string host = authority;
  std::string port;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string::npos) at.fail("\"url\": an IPv6 address without its closing ]");
    port = host.substr(close + 1);
    host = host.substr(0, close + 1);
    if (!port.empty() && port.front() != ':') at.fail("\"url\": text after the IPv6 address");
    if (!port.empty()) port.erase(0, 1);
  } else if (const size_t colon = host.rfind(':'); colon != std::string::npos) {
    port = host.substr(colon + 1);
    host.resize(colon);
  }
  if (host.empty() || host == "[]") at.fail("\"url\" has no host");
  if (authority.find(':') != std::string::npos && authority.back() == ':')
    at.fail("\"url\": an empty port");
  if (!port.empty()) {
    const bool digits =
        port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535)
      at.fail("\"url\": the port must be from 1 to 65535");
  }
  return url;
}

// An HTTP header name: RFC 9110's token characters.
bool header_token(std::string_view name) noexcept {
  if (name.empty()) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

// "headers" (HTTP header names, each once whatever its case; not the ones the transport sets)
// or "env" (names without '=' or control characters).
Headers string_map(const json& object, const char* key, const At& at, bool header_names) {
  Headers out;
  const auto it = object.find(key);
  if (it == object.end()) return out;
  if (!it->is_object()) at.fail(fmt::format("{:?} must be an object of strings", key));
  std::set<std::string> seen;
  for (const auto& [name, value] : it->items()) {
    if (!value.is_string()) at.fail(fmt::format("{:?}: {:?} must be a string", key, name));
    const std::string v = value.get<std::string>();
    const bool bad_name =
        header_names ? !header_token(name)
                     : name.empty() || has_control(name) || name.find('=') != std::string::npos;
    if (bad_name) at.fail(fmt::format("{:?}: {:?} is not a valid name", key, name));
    if (header_names) {
      const std::string l = lower(name);
      if (l == "content-length" || l == "transfer-encoding" || l == "connection" || l == "host")
        at.fail(fmt::format("{:?}: {:?} is set by the worker itself", key, name));
      if (!seen.insert(l).second)
        at.fail(fmt::format("{:?}: {:?} is given twice (names are case-insensitive)", key, name));
    }
    for (const unsigned char c : v)
      if ((c < 0x20 && !(header_names && c == '\t')) || c == 0x7f)
        at.fail(fmt::format("{:?}: the value of {:?} holds control characters", key, name));
    out.emplace_back(name, v);
  }
  return out;
}

std::string name_field(const json& object, const At& at) {
  std::string name = string_field(object, "name", at, true);
  if (!valid_tool_name(name))
    at.fail(
        fmt::format("\"name\" {:?} must be 1 to 64 of A-Z a-z 0-9 _ -, and not none or all", name));
  return name;
}

HttpTool read_tool(const json& entry, const At& at) {
  if (!entry.is_object()) at.fail("must be an object");
  only_keys(entry, {"name", "description", "parameters", "url", "headers", "timeout_ms"}, at);
  HttpTool t;
  t.name = name_field(entry, at);
  t.description = string_field(entry, "description", at, false);
  const auto p = entry.find("parameters");
  if (p == entry.end()) {
    t.parameters = json{{"type", "object"}, {"properties", json::object()}}.dump();
  } else {
    if (!p->is_object()) at.fail("\"parameters\" must be a JSON Schema object");
    json schema = *p;
    const auto type = schema.find("type");
    if (type != schema.end() && *type != "object")
      at.fail(
          "\"parameters\" must describe an object (\"type\": \"object\"): the arguments "
          "are one JSON object");
    // Some servers want both (Gemini's OpenAI endpoint, older Ollama): written out when left out.
    if (type == schema.end()) schema["type"] = "object";
    if (!schema.contains("properties")) schema["properties"] = json::object();
    t.parameters = schema.dump();
  }
  t.url = url_field(entry, at);
  t.headers = string_map(entry, "headers", at, true);
  if (const auto ms = entry.find("timeout_ms"); ms != entry.end()) {
    if (!ms->is_number_integer() || *ms < kMinToolTimeout.count() || *ms > kMaxToolTimeout.count())
      at.fail(fmt::format("\"timeout_ms\" must be an integer from {} to {}",
                          kMinToolTimeout.count(), kMaxToolTimeout.count()));
    t.timeout = std::chrono::milliseconds(ms->get<int64_t>());
  }
  return t;
}

McpServer read_server(const json& entry, const At& at) {
  if (!entry.is_object()) at.fail("must be an object");
  McpServer s;
  s.name = name_field(entry, at);
  const bool has_url = entry.contains("url");
  const bool has_command = entry.contains("command");
  if (has_url == has_command)
    at.fail("give either \"url\" (Streamable HTTP) or \"command\" (stdio), not both or neither");
  if (has_url) {
    only_keys(entry, {"name", "url", "headers"}, at);
    s.url = url_field(entry, at);
    s.headers = string_map(entry, "headers", at, true);
    return s;
  }
  if (entry.contains("args"))
    at.fail(
        "unknown field \"args\": give the program and its arguments together as \"command\", "
        "e.g. [\"npx\", \"-y\", \"@modelcontextprotocol/server-everything\"]");
  only_keys(entry, {"name", "command", "env"}, at);
  const json& command = entry["command"];
  if (!command.is_array() || command.empty())
    at.fail("\"command\" must be a non-empty array of strings (argv)");
  for (const json& arg : command) {
    if (!arg.is_string()) at.fail("\"command\" must be a non-empty array of strings (argv)");
    s.command.push_back(arg.get<std::string>());
    if (s.command.back().find('\0') != std::string::npos)
      at.fail("\"command\" holds a NUL character");
  }
  if (s.command.front().empty()) at.fail("\"command\"[0] is empty");
  s.env = string_map(entry, "env", at, false);
  return s;
}

}  // namespace

bool valid_tool_name(std::string_view name) noexcept {
  // "none" and "all" are words of `chat set --tools`, never names.
  if (name.empty() || name.size() > 64 || name == "none" || name == "all") return false;
  for (const char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-'))
      return false;
  return true;
}

namespace {

// The line and column of byte `offset` in `text`, 1-based.
std::string position(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1;
  size_t column = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("line {}, column {}", line, column);
}

// The whole file parsed, refusing what nlohmann accepts silently: a key given twice in one object
// (the first would be dropped without a word), and nesting deeper than kMaxDepth.
json parse_strict(std::string_view text, const At& top) {
  constexpr int kMaxDepth = 64;
  std::vector<std::set<std::string>> keys;
  std::string repeated;
  bool too_deep = false;
  const json::parser_callback_t strict = [&](int depth, json::parse_event_t event, json& parsed) {
    too_deep = too_deep || depth > kMaxDepth;
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == json::parse_event_t::key && !keys.empty() &&
        !keys.back().insert(parsed.get<std::string>()).second && repeated.empty())
      repeated = parsed.get<std::string>();
    return !too_deep;
  };
  json doc;
  try {
    doc = json::parse(text, strict);
  } catch (const json::parse_error& e) {
    std::string why = e.what();
    if (const size_t colon = why.rfind(": "); colon != std::string::npos) why.erase(0, colon + 2);
    top.fail(fmt::format("not valid JSON at {}: {}", position(text, e.byte > 0 ? e.byte - 1 : 0),
                         why.substr(0, 200)));
  }
  if (too_deep) top.fail(fmt::format("nested deeper than {} levels", kMaxDepth));
  if (!repeated.empty())
    top.fail(fmt::format("the key {:?} is given twice in one object", repeated));
  return doc;
}

}  // namespace

ToolsFile parse_tools_file(std::string_view text, const std::string& source) {
  const At top{source, ""};
  const json doc = parse_strict(text, top);
  if (!doc.is_object()) top.fail("must be a JSON object with \"tools\" and/or \"mcp_servers\"");
  if (doc.contains("mcpServers"))
    top.fail(
        "unknown field \"mcpServers\": this file's list is \"mcp_servers\", an array of "
        "{\"name\", \"url\"} or {\"name\", \"command\": [argv...]}");
  only_keys(doc, {"tools", "mcp_servers"}, top);
  ToolsFile out;
  std::set<std::string> names;
  const auto unique = [&names](const std::string& name, const At& at) {
    if (!names.insert(name).second)
      at.fail(fmt::format("the name {:?} is used twice (names are unique across the file)", name));
  };
  for (const char* key : {"tools", "mcp_servers"}) {
    const auto list = doc.find(key);
    if (list == doc.end()) continue;
    if (!list->is_array()) top.fail(fmt::format("{:?} must be an array", key));
    for (size_t i = 0; i < list->size(); ++i) {
      const json& entry = (*list)[i];
      std::string label = fmt::format("{}[{}]", key, i);
      if (entry.is_object() && entry.contains("name") && entry["name"].is_string())
        label += fmt::format(" {:?}", entry["name"].get<std::string>());
      const At at{source, label};
      if (std::string_view(key) == "tools") {
        out.tools.push_back(read_tool(entry, at));
        unique(out.tools.back().name, at);
      } else {
        out.mcp_servers.push_back(read_server(entry, at));
        unique(out.mcp_servers.back().name, at);
      }
    }
  }
  if (out.tools.empty() && out.mcp_servers.empty())
    top.fail("declares no tools and no MCP servers");
  return out;
}

ToolsFile load_tools_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ToolsFileError(fmt::format("{}: is a directory, not a file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ToolsFileError(fmt::format("{}: cannot be read ({})", path, std::strerror(errno)));
  std::string text;
  text.reserve(4096);
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxToolsFileBytes)
      throw ToolsFileError(fmt::format("{}: larger than {} bytes", path, kMaxToolsFileBytes));
  }
  return parse_tools_file(text, path);
}

}  // namespace autonous::tools
