#pragma once
// The LLM endpoint's key: OPENAI_API_KEY, or the first line of the file OPENAI_API_KEY_FILE names
// (a systemd credential, `LoadCredential=` read through `%d/…`, or any file only the service's
// user can read), so the key need not sit in the environment. Setting both is refused.

#include <string>

#include "internal/config/config.h"

namespace autonous::config {

// Throws ConfigError("OPENAI_API_KEY_FILE") when both are set, or the file cannot be read or
// holds no key. The key is trimmed of surrounding whitespace.
std::string read_api_key(const EnvLookup& env);

}  // namespace autonous::config
