#include "internal/tokens/truncate.h"

#include <algorithm>

#include "internal/common/utf8.h"
#include "internal/tokens/token_counter.h"

namespace autonous::tokens {

std::string cut_marker(size_t cut_code_points) {
  return "\n[\xE2\x80\xA6 " + std::to_string(cut_code_points) + " characters cut]";
}

std::string middle_marker(size_t cut_code_points) {
  return "\n[\xE2\x80\xA6 " + std::to_string(cut_code_points) + " characters cut \xE2\x80\xA6]\n";
}

std::string cut_to_chars(std::string_view text, size_t keep) {
  const size_t total = common::count_code_points(text);
  if (total <= keep) return std::string(text);
  std::string out(text.substr(0, common::prefix_bytes(text, keep)));
  out += cut_marker(total - keep);
  return out;
}

namespace {

// A long candidate(k), k in [0, total), whose count is at most `max_tokens`; "" if none fits.
// The text costs `text_tokens`, so k ≈ total · max / text_tokens is a good first probe; a binary
// search around it stops once the bracket is within 1/32 of k, so a megabyte text costs a handful
// of counts of candidate-sized strings, not of the whole text. Counts grow with k, which makes the
// search sound; every returned candidate was counted.
template <typename Make>
std::string near_longest(size_t total, int64_t max_tokens, int64_t text_tokens,
                         const TokenCounter& counter, const Make& candidate_for) {
  if (total == 0 || max_tokens < 0) return {};
  std::string best;
  auto fits = [&](size_t k) {
    std::string c = candidate_for(k);
    if (counter.count_text(c) > max_tokens) return false;
    best = std::move(c);
    return true;
  };
  size_t lo = 0;      // fits, or 0 before anything is known
  size_t hi = total;  // does not fit
  if (text_tokens > 0 && max_tokens > 0) {
    const auto guess =
        static_cast<size_t>(static_cast<double>(total) * static_cast<double>(max_tokens) /
                            static_cast<double>(text_tokens));
    const size_t probe = std::min(guess, total - 1);
    if (fits(probe)) {
      lo = probe;
      const size_t up = std::min(total, probe + probe / 8 + 8);
      if (up < total && fits(up))
        lo = up;
      else
        hi = up;
    } else {
      hi = probe;
      const size_t down = probe - std::min(probe, probe / 8 + 8);
      if (fits(down))
        lo = down;
      else
        hi = down;
    }
  }
  if (lo == 0 && !fits(0)) return {};
  while (hi - lo > std::max<size_t>(1, lo / 32)) {
    const size_t mid = lo + (hi - lo) / 2;
    if (fits(mid))
      lo = mid;
    else
      hi = mid;
  }
  return best;
}

}  // namespace

std::string cut_to_tokens(std::string_view text, int64_t max_tokens, const TokenCounter& counter) {
  if (counter.count_text(text) <= max_tokens) return std::string(text);
  return cut_to_tokens(text, max_tokens, counter.count_text(text), counter);
}

std::string cut_to_tokens(std::string_view text, int64_t max_tokens, int64_t text_tokens,
                          const TokenCounter& counter) {
  if (text_tokens <= max_tokens) return std::string(text);
  return near_longest(common::count_code_points(text), max_tokens, text_tokens, counter,
                      [&](size_t keep) { return cut_to_chars(text, keep); });
}

std::string cut_middle_to_tokens(std::string_view text, int64_t max_tokens, int64_t text_tokens,
                                 const TokenCounter& counter) {
  if (text_tokens <= max_tokens) return std::string(text);
  const size_t total = common::count_code_points(text);
  return near_longest(total, max_tokens, text_tokens, counter, [&](size_t keep) {
    const size_t head = (keep + 1) / 2;
    const size_t tail = keep - head;
    const size_t head_bytes = common::prefix_bytes(text, head);
    const size_t tail_start = common::prefix_bytes(text, total - tail);
    std::string out(text.substr(0, head_bytes));
    out += middle_marker(total - keep);
    out.append(text.substr(tail_start));
    return out;
  });
}

std::string tail_to_tokens(std::string_view text, int64_t max_tokens, const TokenCounter& counter) {
  const size_t total = common::count_code_points(text);
  const auto tail = [&](size_t n) { return text.substr(common::prefix_bytes(text, total - n)); };
  size_t lo = 0;  // fits
  size_t hi = total;
  if (max_tokens <= 0) return {};
  if (counter.count_text(text) <= max_tokens) return std::string(text);
  while (lo < hi) {  // the largest n whose tail fits; the tails here are short (a small room)
    const size_t mid = lo + (hi - lo + 1) / 2;
    if (counter.count_text(tail(mid)) <= max_tokens) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return std::string(tail(lo));
}

}  // namespace autonous::tokens
