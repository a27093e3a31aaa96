#pragma once
// Usage: the token counts an OpenAI-compatible API reports for one call. A value shared by the
// client (which parses it), the engine (summaries) and the events and stores (which record it).

#include <cstdint>
#include <optional>

#include <nlohmann/json_fwd.hpp>

namespace autonous::common {

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t total_tokens = 0;
  std::optional<int64_t> cached_tokens;  // prompt_tokens_details.cached_tokens, when sent
};

// {"prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens" (null when not sent)}:
// how events and stored rows carry it. Found by nlohmann's ADL: `json j = usage;`.
void to_json(nlohmann::json& j, const Usage& usage);

}  // namespace autonous::common
