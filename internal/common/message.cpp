#include "internal/common/message.h"

namespace autonous::common {

std::string_view to_string(Role role) noexcept {
  switch (role) {
    case Role::kSystem:
      return "system";
    case Role::kUser:
      return "user";
    case Role::kAssistant:
      return "assistant";
    case Role::kTool:
      return "tool";
  }
  return "user";
}

std::optional<Role> parse_role(std::string_view s) noexcept {
  if (s == "system") return Role::kSystem;
  if (s == "user") return Role::kUser;
  if (s == "assistant") return Role::kAssistant;
  if (s == "tool") return Role::kTool;
  return std::nullopt;
}

}  // namespace autonous::common
