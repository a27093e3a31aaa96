#include "internal/tools/toolset.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "internal/tools/mcp_client.h"

namespace autonous::tools {

Toolset::Toolset(std::vector<HttpTool> http, std::vector<std::shared_ptr<McpClient>> mcp, Warn warn)
    : http_(std::move(http)), mcp_(std::move(mcp)), warn_(std::move(warn)) {
  const std::lock_guard lock(mu_);
  rebuild();
}

Toolset::~Toolset() = default;

void Toolset::rebuild() const {
  tools_.clear();
  std::set<std::string> seen;
  for (const HttpTool& t : http_) {
    seen.insert(t.name);
    tools_.push_back({t.name, t.description, t.parameters, &t, nullptr, t.timeout});
  }
  for (const auto& client : mcp_) {
    std::vector<McpTool> listed;
    try {
      listed = client->tools();
    } catch (const McpError& e) {
      // Its tools as last read stay offered: one failed list must not take them away until
      // the server says its list changed again.
      if (warn_) warn_(std::string("MCP server ") + client->server() + ": " + e.what());
      listed = client->cached();
    } catch (const nlohmann::json::exception& e) {
      if (warn_) warn_(std::string("MCP server ") + client->server() + ": " + e.what());
      listed = client->cached();
    }
    for (McpTool& t : listed) {
      if (!valid_tool_name(t.name)) {
        if (warn_)
          warn_("MCP server " + client->server() + ": tool \"" + t.name +
                "\" left out: the wire takes 1 to 64 of A-Z a-z 0-9 _ -, and not none or all");
        continue;
      }
      if (!seen.insert(t.name).second) {
        if (warn_)
          warn_("MCP server " + client->server() + ": tool \"" + t.name +
                "\" left out: an earlier tool has that name");
        continue;
      }
      tools_.push_back(
          {t.name, t.description, t.input_schema, nullptr, client.get(), kDefaultToolTimeout});
    }
  }
  offered_.clear();
  entries_.clear();
  for (const OfferedTool& t : tools_) {
    nlohmann::json f = {{"name", t.name}};
    if (!t.description.empty()) f["description"] = t.description;
    f["parameters"] = nlohmann::json::parse(t.parameters, nullptr, false);
    if (f["parameters"].is_discarded()) f["parameters"] = {{"type", "object"}};
    entries_.push_back(nlohmann::json{{"type", "function"}, {"function", std::move(f)}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  offered_ = join(entries_, nullptr);
}

// The entries as a JSON array's text, those of tools in `only` when given; "" when none.
std::string Toolset::join(const std::vector<std::string>& entries,
                          const std::vector<std::string>* only) const {
  std::string out;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (only != nullptr && std::find(only->begin(), only->end(), tools_[i].name) == only->end())
      continue;
    out += out.empty() ? "[" : ",";
    out += entries[i];
  }
  return out.empty() ? out : out + "]";
}

void Toolset::refresh() const {
  for (const auto& client : mcp_)
    if (client->list_changed()) {
      rebuild();
      return;
    }
}

bool Toolset::empty() const {
  const std::lock_guard lock(mu_);
  refresh();
  return tools_.empty();
}

std::string Toolset::offered(const std::optional<std::vector<std::string>>& only) const {
  const std::lock_guard lock(mu_);
  refresh();
  return only ? join(entries_, &*only) : offered_;
}

std::optional<OfferedTool> Toolset::find(
    std::string_view name, const std::optional<std::vector<std::string>>& only) const {
  if (only && std::find(only->begin(), only->end(), name) == only->end()) return std::nullopt;
  const std::lock_guard lock(mu_);
  for (const OfferedTool& t : tools_)
    if (t.name == name) return t;
  return std::nullopt;
}

std::vector<std::string> Toolset::names() const {
  const std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const OfferedTool& t : tools_) out.push_back(t.name);
  return out;
}

std::vector<std::string> Toolset::sources() const {
  const std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const OfferedTool& t : tools_)
    out.push_back(t.http != nullptr ? "http" : "mcp:" + t.mcp->server());
  return out;
}

}  // namespace autonous::tools
