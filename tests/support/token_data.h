#pragma once
// Shared by the token-counting tests: where the rank files are (TOKENIZER_DATA_DIR, else the
// default bootstrap installs to).

#include <cstdlib>
#include <string>

#include "internal/tokens/bpe_counter.h"
#include "tests/support/temp_dir.h"

namespace autonous::testing {

inline std::string tokenizer_data_dir() {
  const char* dir = std::getenv("TOKENIZER_DATA_DIR");  // NOLINT(concurrency-mt-unsafe)
  return dir != nullptr ? dir : tokens::kDefaultTokenizerDataDir;
}

}  // namespace autonous::testing
