#pragma once
// Request and response values of POST /chat/completions and /embeddings, as far as autonous
// uses them.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "internal/common/usage.h"

namespace autonous::openai {

using Usage = common::Usage;

// One tool call of a reply. `arguments` is the JSON text the model wrote: it may be invalid.
struct ToolCall {
  std::string id;  // the server's, or "call_<index>" when it gave none
  std::string name;
  std::string arguments;
};

struct ChatResult {
  std::string content;  // choices[0].message.content ("" when null; refusal text if any)
  // The tool calls, when the request offered tools and the model called some; `tool_calls_json`
  // is them as the wire's array (ids filled in), for the assistant message that replays them.
  std::vector<ToolCall> tool_calls;
  std::string tool_calls_json;
  std::string finish_reason;   // stop, length, tool_calls, content_filter, … ("" when absent)
  std::string model;           // as the server names it (may differ from the request's)
  std::optional<Usage> usage;  // some servers omit it
  long http_status = 0;
  std::chrono::milliseconds latency{0};
  // A streamed reply (CallOptions::stream): from the request's start to its first text.
  std::optional<std::chrono::milliseconds> ttft;
};

// POST /embeddings: one vector per input, in input order.
struct EmbeddingResult {
  std::vector<std::vector<float>> vectors;
  std::optional<Usage> usage;
  std::chrono::milliseconds latency{0};
};

}  // namespace autonous::openai
