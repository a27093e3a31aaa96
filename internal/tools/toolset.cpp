#include "internal/tools/toolset.h"

#include <nlohmann/json.hpp>

namespace autonous::tools {

Toolset::Toolset(std::vector<HttpTool> http) : http_(std::move(http)) {
  if (http_.empty()) return;
  nlohmann::json tools = nlohmann::json::array();
  for (const HttpTool& t : http_) {
    nlohmann::json f = {{"name", t.name}};
    if (!t.description.empty()) f["description"] = t.description;
    f["parameters"] = nlohmann::json::parse(t.parameters);  // checked by parse_tools_file
    tools.push_back({{"type", "function"}, {"function", std::move(f)}});
  }
  offered_ = tools.dump();
}

const HttpTool* Toolset::find(std::string_view name) const {
  for (const HttpTool& t : http_)
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<std::string> Toolset::names() const {
  std::vector<std::string> out;
  for (const HttpTool& t : http_) out.push_back(t.name);
  return out;
}

}  // namespace autonous::tools
