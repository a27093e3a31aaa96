#include "internal/config/install_paths.h"

#include <filesystem>
#include <string>
#include <system_error>

#include "internal/common/text.h"
#include "internal/config/config.h"

namespace autonous::config {

std::string tokenizer_dir_beside_binary(const std::string& fallback) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return fallback;
  const std::filesystem::path dir =
      exe.parent_path().parent_path() / "share" / "autonous" / "tokenizer";
  return std::filesystem::is_directory(dir, ec) ? dir.string() : fallback;
}

std::string tokenizer_cache_dir(const std::string& setting, const std::string& cache_directory,
                                const std::string& xdg_cache_home, const std::string& home) {
  const std::string set = common::trim(setting);
  if (common::to_lower_ascii(set) == "off") return "";
  if (!set.empty()) {
    if (set.front() != '/')
      throw ConfigError("TOKENIZER_CACHE_DIR",
                        "must be an absolute path or off, not '" + set + "'");
    return set;
  }
  // The unit's CacheDirectory=autonous, among others; another service's (a command run from
  // it) is not ours. Relative paths are ignored, as the XDG specification says.
  for (size_t at = 0; at <= cache_directory.size();) {
    const size_t end = std::min(cache_directory.find(':', at), cache_directory.size());
    const std::string dir = cache_directory.substr(at, end - at);
    if (!dir.empty() && dir.front() == '/' && std::filesystem::path(dir).filename() == "autonous")
      return dir + "/tokenizer";
    at = end + 1;
  }
  if (!xdg_cache_home.empty() && xdg_cache_home.front() == '/')
    return xdg_cache_home + "/autonous/tokenizer";
  if (!home.empty() && home.front() == '/') return home + "/.cache/autonous/tokenizer";
  return "";
}

}  // namespace autonous::config
