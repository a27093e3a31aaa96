#include "internal/tools/tools_file.h"

#include <fstream>
#include <iterator>
#include <set>

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

std::string url_field(const json& object, const At& at) {
  std::string url = string_field(object, "url", at, true);
  const bool http = url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
  if (!http || url.size() <= url.find("//") + 2)
    at.fail(fmt::format("\"url\" must be an http:// or https:// URL, not {:?}", url));
  if (has_control(url) || url.find(' ') != std::string::npos)
    at.fail("\"url\" holds spaces or control characters");
  return url;
}

Headers string_map(const json& object, const char* key, const At& at, bool header_names) {
  Headers out;
  const auto it = object.find(key);
  if (it == object.end()) return out;
  if (!it->is_object()) at.fail(fmt::format("{:?} must be an object of strings", key));
  for (const auto& [name, value] : it->items()) {
    if (!value.is_string()) at.fail(fmt::format("{:?}: {:?} must be a string", key, name));
    const std::string v = value.get<std::string>();
    const bool bad_name =
        name.empty() || has_control(name) ||
        (header_names && name.find_first_of(" :()<>@,;\\\"/[]?={}") != std::string::npos);
    if (bad_name) at.fail(fmt::format("{:?}: {:?} is not a valid name", key, name));
    if (has_control(v))
      at.fail(fmt::format("{:?}: the value of {:?} holds control characters", key, name));
    out.emplace_back(name, v);
  }
  return out;
}

std::string name_field(const json& object, const At& at) {
  std::string name = string_field(object, "name", at, true);
  if (!valid_tool_name(name))
    at.fail(fmt::format("\"name\" {:?} must be 1 to 64 of A-Z a-z 0-9 _ -", name));
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
    t.parameters = R"({"type":"object","properties":{}})";
  } else {
    if (!p->is_object()) at.fail("\"parameters\" must be a JSON Schema object");
    const auto type = p->find("type");
    if (type != p->end() && *type != "object")
      at.fail(
          "\"parameters\" must describe an object (\"type\": \"object\"): the arguments "
          "are one JSON object");
    t.parameters = p->dump();
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
  only_keys(entry, {"name", "command", "env"}, at);
  const json& command = entry["command"];
  if (!command.is_array() || command.empty())
    at.fail("\"command\" must be a non-empty array of strings (argv)");
  for (const json& arg : command) {
    if (!arg.is_string()) at.fail("\"command\" must be a non-empty array of strings (argv)");
    s.command.push_back(arg.get<std::string>());
  }
  if (s.command.front().empty()) at.fail("\"command\"[0] is empty");
  s.env = string_map(entry, "env", at, false);
  for (const auto& [name, value] : s.env)
    if (name.find('=') != std::string::npos)
      at.fail(fmt::format("\"env\": {:?} is not a valid name", name));
  return s;
}

}  // namespace

bool valid_tool_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-'))
      return false;
  return true;
}

ToolsFile parse_tools_file(std::string_view text, const std::string& source) {
  const At top{source, ""};
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) top.fail("not valid JSON");
  if (!doc.is_object()) top.fail("must be a JSON object with \"tools\" and/or \"mcp_servers\"");
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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ToolsFileError(fmt::format("{}: cannot be read", path));
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
