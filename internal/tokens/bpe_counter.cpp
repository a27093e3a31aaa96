#include "internal/tokens/bpe_counter.h"

#include <filesystem>
#include <stdexcept>

namespace autonous::tokens {

int64_t BpeCounter::count_text(std::string_view text) const {
  int64_t total = 0;
  pretokenize(text, pattern_, [&](std::string_view piece) { total += ranks_.count_piece(piece); });
  return total;
}

std::unique_ptr<BpeCounter> load_bpe_counter(const std::string& encoding,
                                             const std::string& data_dir,
                                             const std::string& cache_dir,
                                             BpeRanks::CacheUse* use) {
  SplitPattern pattern = SplitPattern::kCl100k;
  if (encoding == "cl100k_base") {
    pattern = SplitPattern::kCl100k;
  } else if (encoding == "o200k_base") {
    pattern = SplitPattern::kO200k;
  } else {
    throw std::invalid_argument("unknown encoding '" + encoding + "'");
  }
  const std::string path = (std::filesystem::path(data_dir) / (encoding + ".tiktoken")).string();
  if (!std::filesystem::exists(path))
    throw std::runtime_error("rank file " + path +
                             " is missing (scripts/bootstrap fetches it; TOKENIZER_DATA_DIR "
                             "points elsewhere)");
  return std::make_unique<BpeCounter>(encoding, BpeRanks::load_cached(path, cache_dir, use),
                                      pattern);
}

}  // namespace autonous::tokens
