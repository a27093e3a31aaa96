#include "internal/tokens/memo_counter.h"

#include <cstring>
#include <functional>
#include <random>
#include <string_view>

namespace autonous::tokens {

namespace {

uint64_t mix(uint64_t x) noexcept {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t draw_secret() {
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device() ^ 0x9e3779b97f4a7c15ULL;
}

}  // namespace

MemoCounter::MemoCounter(std::unique_ptr<TokenCounter> inner)
    : inner_(std::move(inner)),
      stored_name_(std::string(inner_->name()) + "@" + std::to_string(kCountVersion)),
      secret_(draw_secret()),
      table_(kSlots) {}

// Each 8-byte block is mixed with the secret and the running state; the secret is never
// written anywhere, so which texts collide under it cannot be worked out from outside.
uint64_t MemoCounter::keyed_hash(std::string_view text) const noexcept {
  uint64_t h = secret_ ^ text.size();
  size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t block;
    std::memcpy(&block, text.data() + i, 8);
    h = mix(h ^ block ^ secret_) + 0x9e3779b97f4a7c15ULL;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, text.data() + i, text.size() - i);
  return mix(h ^ tail ^ (secret_ >> 1));
}

int64_t MemoCounter::count_text(std::string_view text) const {
  if (text.size() < kMinBytes) return inner_->count_text(text);
  const uint64_t hash = std::hash<std::string_view>{}(text);
  const uint64_t keyed = keyed_hash(text);
  const size_t slot = hash & (kSlots - 1);
  std::mutex& lock = locks_[slot % kStripes];
  {
    const std::lock_guard<std::mutex> guard(lock);
    const Entry& e = table_[slot];
    if (e.hash == hash && e.keyed == keyed && e.bytes == text.size()) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      return e.tokens;
    }
  }
  const int64_t tokens = inner_->count_text(text);  // outside the lock: other slots go on
  misses_.fetch_add(1, std::memory_order_relaxed);
  const std::lock_guard<std::mutex> guard(lock);
  table_[slot] = Entry{hash, keyed, text.size(), tokens};
  return tokens;
}

void MemoCounter::remember(std::string_view text, int64_t tokens) const {
  // A byte-level BPE token holds at least one byte: a count outside [1, bytes] is not this
  // text's (a front end's figure, another counter's), and is not taken.
  if (text.size() < kMinBytes || tokens < 1 || static_cast<uint64_t>(tokens) > text.size()) return;
  const uint64_t hash = std::hash<std::string_view>{}(text);
  const uint64_t keyed = keyed_hash(text);
  const size_t slot = hash & (kSlots - 1);
  const std::lock_guard<std::mutex> guard(locks_[slot % kStripes]);
  Entry& e = table_[slot];
  if (e.hash == hash && e.keyed == keyed && e.bytes == text.size()) return;  // counted here
  e = Entry{hash, keyed, text.size(), tokens};
}

int64_t MemoCounter::hits() const { return hits_.load(std::memory_order_relaxed); }
int64_t MemoCounter::misses() const { return misses_.load(std::memory_order_relaxed); }

}  // namespace autonous::tokens
