#include "internal/tokens/memo_counter.h"

#include <functional>
#include <string_view>

namespace autonous::tokens {

MemoCounter::MemoCounter(std::unique_ptr<TokenCounter> inner)
    : inner_(std::move(inner)), table_(kSlots) {}

int64_t MemoCounter::count_text(std::string_view text) const {
  if (text.size() < kMinBytes) return inner_->count_text(text);
  const uint64_t hash = std::hash<std::string_view>{}(text);
  const size_t slot = hash & (kSlots - 1);
  std::mutex& lock = locks_[slot % kStripes];
  {
    const std::lock_guard<std::mutex> guard(lock);
    const Entry& e = table_[slot];
    if (e.hash == hash && e.bytes == text.size()) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return e.tokens;
    }
  }
  const int64_t tokens = inner_->count_text(text);  // outside the lock: other slots go on
  misses_.fetch_add(1, std::memory_order_relaxed);
  const std::lock_guard<std::mutex> guard(lock);
  table_[slot] = Entry{hash, text.size(), tokens};
  return tokens;
}

int64_t MemoCounter::hits() const { return hits_.load(std::memory_order_relaxed); }
int64_t MemoCounter::misses() const { return misses_.load(std::memory_order_relaxed); }

}  // namespace autonous::tokens
