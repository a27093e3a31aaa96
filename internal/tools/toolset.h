#pragma once
// Toolset: the tools a worker offers the model (#29): the declared HTTP tools as a chat request's
// `tools` (OpenAI's function shape: {"type": "function", "function": {"name", "description",
// "parameters"}}), and each looked up by name when the model calls it. Immutable once built;
// shared by the worker's slots.

#include <string>
#include <string_view>
#include <vector>

#include "internal/tools/tools_file.h"

namespace autonous::tools {

class Toolset {
 public:
  Toolset() = default;
  explicit Toolset(std::vector<HttpTool> http);

  bool empty() const noexcept { return http_.empty(); }
  // The request's `tools` array as JSON text; "" when there are none.
  const std::string& offered() const noexcept { return offered_; }
  // The tool named `name`; nullptr for a name the model made up.
  const HttpTool* find(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<HttpTool> http_;
  std::string offered_;
};

}  // namespace autonous::tools
