#include "internal/config/env_file.h"

#include <fstream>
#include <utility>

#include "internal/common/text.h"

namespace autonous::config {
namespace {

std::string strip(const std::string& s) { return common::trim(s); }

bool valid_key(const std::string& key) {
  if (key.empty()) return false;
  for (size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::map<std::string, std::string> read_env_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("--env-file", "cannot read '" + path + "'");
  std::map<std::string, std::string> out;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::string s = strip(line);
    if (s.empty() || s[0] == '#') continue;
    if (s.rfind("export ", 0) == 0) s = strip(s.substr(7));
    const auto eq = s.find('=');
    const std::string key = eq == std::string::npos ? s : strip(s.substr(0, eq));
    if (eq == std::string::npos || !valid_key(key))
      throw ConfigError("--env-file", path + ":" + std::to_string(number) + ": expected KEY=VALUE");
    std::string value = strip(s.substr(eq + 1));
    // Quotes keep spaces and '#'. An unquoted value ends at " #" (an inline comment, as in
    // systemd's and shells' env files); a '#' inside a word is kept (a URL fragment, a key).
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    } else if (const auto hash = value.find(" #"); hash != std::string::npos) {
      value = strip(value.substr(0, hash));
    } else if (const auto tab = value.find("\t#"); tab != std::string::npos) {
      value = strip(value.substr(0, tab));
    }
    out[key] = value;
  }
  return out;
}

EnvLookup layered_env(EnvLookup primary, std::map<std::string, std::string> file) {
  return [primary = std::move(primary),
          file = std::move(file)](std::string_view name) -> std::optional<std::string> {
    if (auto v = primary(name)) return v;
    const auto it = file.find(std::string(name));
    if (it == file.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace autonous::config
