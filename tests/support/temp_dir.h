#pragma once
// TempDir: a fresh directory under /tmp, removed with everything in it on destruction; and
// read_file, the one file reader of every suite.

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

// The exact bytes of the file at `path` ("" when it cannot be read).
std::string read_file(const std::string& path);

}  // namespace autonous::testing
