#pragma once
// Tools in the stub (#29), so the worker's tool loop runs offline:
// - a chat request that offers `tools` (and no tool_choice "none") gets tool calls when the
//   user's last message asks for them: `[[stub:tool:NAME]]` or `[[stub:tool:NAME:{json}]]`
//   (several: parallel calls), or, without a directive, a word of it is an offered tool's name
//   (called with {"query": the message}); `[[stub:tool-loop:NAME]]` calls NAME on every request
//   (to reach TOOL_MAX_STEPS). When the conversation ends with tool results the reply is
//   "reply to: <message> (tool NAME said: <result's start>; …)";
// - POST /tool/echo answers {"tool": "echo", "arguments": <the body>}, /tool/fail 503,
//   /tool/headers 401 quoting the request's headers, /tool/hang never (until the client gives up),
//   /tool/huge 50 MB, /tool/badutf8 invalid UTF-8;
// - --rules strict: a chat template that wants roles to alternate (llama.cpp's and many Hugging
//   Face templates in vLLM): after an optional system message user and assistant alternate, an
//   assistant message's calls are followed by exactly one tool message per call; anything else
//   is a 400 "Conversation roles must alternate user/assistant/user/assistant/...".

#include <optional>
#include <string>

#include "cmd/autonous-stub/http.h"

namespace autonous::stub {

// The tool-calling reply for chat request `body`, or nullopt when it gets the normal reply;
// `content` is what the normal reply would say.
std::optional<json> tool_reply(const json& body, const std::string& last_user);

// The text a reply to a conversation ending with tool results says; nullopt when it does not.
std::optional<std::string> after_tool_results(const json& messages, const std::string& last_user);

// The answer of a /tool/... endpoint; false when the connection is to close (hang, huge).
bool serve_tool(int fd, const Request& req);
bool is_tool_path(const Request& req);

// The strict template's refusal of `messages`, or nullopt.
std::optional<std::string> strict_roles_refusal(const json& messages);

}  // namespace autonous::stub
