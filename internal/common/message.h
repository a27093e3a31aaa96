#pragma once
// Message: one chat message (role + content) as the context pipeline and the LLM client see it.
// A plain value; `history_id` is the stored row's id, 0 for messages not read from history.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace autonous::common {

enum class Role { kSystem, kUser, kAssistant, kTool };

// "system", "user", "assistant" or "tool": the strings stored in history.role and sent on the wire.
std::string_view to_string(Role role) noexcept;
// The role named by `s`, or nullopt for anything else.
std::optional<Role> parse_role(std::string_view s) noexcept;

struct Message {
  Role role = Role::kUser;
  std::string content;
  int64_t history_id = 0;

  bool operator==(const Message&) const = default;
};

}  // namespace autonous::common
