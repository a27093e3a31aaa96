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

struct ChatResult {
  std::string content;         // choices[0].message.content ("" when null; refusal text if any)
  std::string finish_reason;   // stop, length, tool_calls, content_filter, … ("" when absent)
  std::string model;           // as the server names it (may differ from the request's)
  std::optional<Usage> usage;  // some servers omit it
  long http_status = 0;
  std::chrono::milliseconds latency{0};
};

// POST /embeddings: one vector per input, in input order.
struct EmbeddingResult {
  std::vector<std::vector<float>> vectors;
  std::optional<Usage> usage;
  std::chrono::milliseconds latency{0};
};

}  // namespace autonous::openai
