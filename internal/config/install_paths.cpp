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

}  // namespace autonous::config
