#include "internal/tokens/token_counter.h"

#include "internal/common/utf8.h"

namespace autonous::tokens {

int64_t TokenCounter::count_prompt(const std::vector<common::Message>& messages) const {
  int64_t total = per_request();
  for (const auto& m : messages) total += count_message(m);
  return total;
}

int64_t CharsOver4Counter::count_text(std::string_view text) const {
  return (static_cast<int64_t>(common::count_code_points(text)) + 3) / 4;
}

int64_t estimate_tokens(const common::Message& m) {
  static const CharsOver4Counter kCounter;
  return kCounter.count_message(m);
}

}  // namespace autonous::tokens
