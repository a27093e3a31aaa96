#pragma once
// Tool units (#29): an assistant message that called tools (its `tool_calls`) and the `tool`
// messages that answer it, which a chat API takes only together: each call answered by a tool
// message in the run right after it, each tool message in that run answering one of its calls.
// An orphan result, or a call without its result, is refused (OpenAI's 400, a strict chat
// template's "roles must alternate").
//
// pair_tool_units makes a history valid for the wire whatever was stored, before it is fitted:
// - a unit whose calls and results match is kept as it is;
// - tool messages before the first other message (the read window or a cut began inside a unit)
//   are left out: their call is not in this history;
// - any other tool message that answers no call before it (a front end's row, a row from before
//   tools, a broken unit) becomes a user message marked as a tool's output, as before tools,
//   keeping the tool_call_id it had (never sent for a user message): kept history does not start
//   on such a message when it had one, as it does not start inside a unit;
// - an assistant message whose calls are not all answered loses its calls, keeping its text, or
//   saying which tools it called when it had none.
// The engine cuts history only at user messages (compaction.h, user_start), so a unit is never
// split by a compaction, a fold or the fit.
//
// A request that offers no tools (none declared, or the chat's list is empty) carries no unit:
// Anthropic and Bedrock refuse tool blocks without tool definitions ("Requests which include
// tool_use or tool_result blocks must define tools"). Each unit's call then says which tools it
// called (or keeps its text) and its results become one user message, each marked as a tool's
// output, so roles still alternate.

#include <string_view>
#include <vector>

#include "internal/common/message.h"

namespace autonous::engine {

// What a tool message that answers no call is sent under (as a user message).
inline constexpr std::string_view kToolOutputHeader = "[tool output]\n";

void pair_tool_units(std::vector<common::Message>& messages, bool tools_offered = true);

}  // namespace autonous::engine
