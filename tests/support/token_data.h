#pragma once
// Shared by the token-counting tests: where the rank files are (TOKENIZER_DATA_DIR, else the
// default bootstrap installs to) and reading a file's exact bytes.

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "internal/tokens/bpe_counter.h"

namespace autonous::testing {

inline std::string tokenizer_data_dir() {
  const char* dir = std::getenv("TOKENIZER_DATA_DIR");  // NOLINT(concurrency-mt-unsafe)
  return dir != nullptr ? dir : tokens::kDefaultTokenizerDataDir;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace autonous::testing
