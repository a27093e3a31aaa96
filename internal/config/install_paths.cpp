#include "internal/config/install_paths.h"

#include <filesystem>
#include <system_error>

namespace autonous::config {

std::string tokenizer_dir_beside_binary(const std::string& fallback) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return fallback;
  const std::filesystem::path dir =
      exe.parent_path().parent_path() / "share" / "autonous" / "tokenizer";
  return std::filesystem::is_directory(dir, ec) ? dir.string() : fallback;
}

std::string default_tokenizer_cache_dir(const std::string& cache_directory,
                                        const std::string& xdg_cache_home,
                                        const std::string& home) {
  // Relative paths are ignored, as the XDG specification says.
  if (const std::string first = cache_directory.substr(0, cache_directory.find(':'));
      !first.empty() && first.front() == '/')
    return first + "/tokenizer";
  if (!xdg_cache_home.empty() && xdg_cache_home.front() == '/')
    return xdg_cache_home + "/autonous/tokenizer";
  if (!home.empty() && home.front() == '/') return home + "/.cache/autonous/tokenizer";
  return "";
}

}  // namespace autonous::config
