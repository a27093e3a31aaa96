#include "internal/engine/tool_results.h"

#include <fmt/format.h>

namespace autonous::engine {
bool is_tool_result(const common::Message& m) noexcept {
  return m.role == common::Role::kTool ||
         (m.role == common::Role::kUser && !m.tool_call_id.empty());
}

std::vector<char> results_to_clear(std::span<const common::Message> messages, int64_t through) {
  std::vector<char> out(messages.size(), 0);
  if (through <= 0) return out;
  int kept = 0;
  for (size_t i = messages.size(); i-- > 0;) {
    const common::Message& m = messages[i];
    if (!is_tool_result(m) || m.history_id > through) continue;
    if (kept < kKeptToolResults) {
      ++kept;
      continue;
    }
    out[i] = m.content.size() > kClearableBytes ? 1 : 0;
  }
  return out;
}

std::string cleared_result_text(size_t bytes) {
  return fmt::format(
      "[tool result cleared to save room: {} bytes; call the tool again if it is needed]", bytes);
}

void clear_result(common::Message& m) { m.content = cleared_result_text(m.content.size()); }

}  // namespace autonous::engine
