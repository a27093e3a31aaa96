#include "internal/config/env_file.h"

#include <cstdlib>
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

std::string value_of_line(const std::string& path, int number) {
  return path + ":" + std::to_string(number);
}

// The value of `raw` (what follows '='): quotes keep spaces and '#', and may be followed by a
// comment; an unquoted value ends at a '#' that starts a word (a comment, as in systemd's and
// shells' env files); a '#' inside a word is kept (a URL fragment, a key).
void out_value(const std::string& raw, const std::string& where, std::string& value) {
  const std::string v = strip(raw);
  const bool quoted = !v.empty() && (v.front() == '"' || v.front() == '\'');
  if (quoted) {
    // "…" # comment: the first closing quote ends the value when a comment follows it (a comment
    // may hold quotes of its own: KEY='v' # note 'x').
    // A comment after the closing quote starts after whitespace, as in a shell:
    // KEY="Use "# Summary" here" keeps its inner quotes.
    const auto close = v.find(v.front(), 1);
    const std::string after = close == std::string::npos ? "" : v.substr(close + 1);
    const std::string rest = strip(after);
    if (close != std::string::npos &&
        (rest.empty() ||
         (rest.front() == '#' && (after.front() == ' ' || after.front() == '\t')))) {
      value = v.substr(1, close - 1);
      return;
    }
    if (v.size() >= 2 && v.back() == v.front()) {  // "…" or '…' with quotes inside: as written
      value = v.substr(1, v.size() - 2);
      return;
    }
    throw ConfigError("--env-file", where +
                                        ": a quoted value must end at its closing quote "
                                        "(a # comment may follow)");
  }
  // Unquoted: a comment starts at a '#' after whitespace ("KEY=8 # slots", "KEY= # none");
  // "KEY=#abc" and "KEY=ab#cd" keep theirs, as a shell would.
  value.clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '#' && i > 0 && (raw[i - 1] == ' ' || raw[i - 1] == '\t')) break;
    value += raw[i];
  }
  value = strip(value);
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
    out_value(s.substr(eq + 1), value_of_line(path, number), out[key]);
  }
  return out;
}

EnvLookup process_env() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());  // NOLINT(concurrency-mt-unsafe)
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
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
