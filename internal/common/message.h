#pragma once
// Message: one chat message (role + content) as the context pipeline and the LLM client see it.
// A plain value; `history_id` is the stored row's id, 0 for messages not read from history, and
// `at` its time (the summarizer writes dates from it; it is never sent to the chat model).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace autonous::common {

enum class Role { kSystem, kUser, kAssistant, kTool };

// "system", "user", "assistant" or "tool": the strings stored in history.role and sent on the wire.
std::string_view to_string(Role role) noexcept;
// The role named by `s`, or nullopt for anything else.
std::optional<Role> parse_role(std::string_view s) noexcept;

struct Message {
  Message() = default;
  Message(Role r, std::string text, int64_t id = 0, std::string stored_at = {})
      : role(r), content(std::move(text)), history_id(id), at(std::move(stored_at)) {}

  Role role = Role::kUser;
  std::string content;
  int64_t history_id = 0;
  std::string at;  // when it was stored (history.created_at, UTC ISO 8601); empty otherwise
  // An assistant message that called tools: the calls as the wire writes them (a JSON array of
  // {"id", "type": "function", "function": {"name", "arguments"}}); empty otherwise.
  std::string tool_calls;
  // A tool message: the id of the call it answers; empty otherwise.
  std::string tool_call_id;

  bool operator==(const Message&) const = default;
};

}  // namespace autonous::common
