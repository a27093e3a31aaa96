#pragma once
// TempDir: a fresh directory under /tmp, removed with everything in it on destruction.

#include <filesystem>
#include <string>

namespace autonous::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace autonous::testing
