#include "internal/config/api_key.h"

#include <filesystem>
#include <fstream>

#include "internal/common/text.h"

namespace autonous::config {
namespace {

std::string value_of(const EnvLookup& env, const char* name) {
  const auto raw = env(name);
  return raw ? common::trim(*raw) : std::string();
}

}  // namespace

std::string read_api_key(const EnvLookup& env) {
  const std::string key = value_of(env, "OPENAI_API_KEY");
  const std::string path = value_of(env, "OPENAI_API_KEY_FILE");
  if (path.empty()) return key;
  if (!key.empty())
    throw ConfigError("OPENAI_API_KEY_FILE", "is set as well as OPENAI_API_KEY: set one of them");
  std::error_code ec;
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path, ec))
    throw ConfigError("OPENAI_API_KEY_FILE", "'" + path + "' cannot be read");
  std::string text(4096, '\0');  // a key is one short line
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) throw ConfigError("OPENAI_API_KEY_FILE", "'" + path + "' cannot be read");
  std::string first = common::trim(text.substr(0, text.find('\n')));
  if (first.empty()) throw ConfigError("OPENAI_API_KEY_FILE", "'" + path + "' holds no key");
  return first;
}

}  // namespace autonous::config
