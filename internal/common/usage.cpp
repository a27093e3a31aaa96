#include "internal/common/usage.h"

#include <nlohmann/json.hpp>

namespace autonous::common {

void to_json(nlohmann::json& j, const Usage& u) {
  j = nlohmann::json{{"prompt_tokens", u.prompt_tokens},
                     {"completion_tokens", u.completion_tokens},
                     {"total_tokens", u.total_tokens},
                     {"cached_tokens", u.cached_tokens ? nlohmann::json(*u.cached_tokens)
                                                       : nlohmann::json(nullptr)}};
}

}  // namespace autonous::common
