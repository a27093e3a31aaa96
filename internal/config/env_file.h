#pragma once
// Env files for operators: KEY=VALUE lines, `#` comments, optional `export ` and quotes.
// The real environment wins over the file: the file only fills what is unset.

#include <map>
#include <string>

#include "internal/config/config.h"

namespace autonous::config {

// Parses the file at `path`. Throws ConfigError("--env-file") when it cannot be read or a line
// is not KEY=VALUE (the message gives the line number).
std::map<std::string, std::string> read_env_file(const std::string& path);

// A lookup that asks `primary` first and falls back to `file`. `file` is copied.
EnvLookup layered_env(EnvLookup primary, std::map<std::string, std::string> file);

}  // namespace autonous::config
