#include "internal/context/truncate.h"

#include "internal/common/utf8.h"
#include "internal/context/token_counter.h"

namespace autonous::context {

std::string cut_marker(size_t cut_code_points) {
  return "\n[\xE2\x80\xA6 " + std::to_string(cut_code_points) + " characters cut]";
}

std::string cut_to_chars(std::string_view text, size_t keep) {
  const size_t total = common::count_code_points(text);
  if (total <= keep) return std::string(text);
  std::string out(text.substr(0, common::prefix_bytes(text, keep)));
  out += cut_marker(total - keep);
  return out;
}

std::string cut_to_tokens(std::string_view text, int64_t max_tokens, const TokenCounter& counter) {
  if (counter.count_text(text) <= max_tokens) return std::string(text);
  const size_t total = common::count_code_points(text);
  // Binary search for the longest head that fits with its marker. Counts grow with the head, so
  // the search is sound; the final candidate is checked again all the same.
  size_t lo = 0;
  size_t hi = total;  // the whole text does not fit
  std::string best;
  bool found = false;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    std::string candidate = cut_to_chars(text, mid);
    if (counter.count_text(candidate) <= max_tokens) {
      best = std::move(candidate);
      found = true;
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (!found) return {};
  return best;
}

}  // namespace autonous::context
