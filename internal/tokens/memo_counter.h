#pragma once
// MemoCounter: an exact counter that remembers what it counted. Every turn counts the chat's
// whole verbatim history again, and with an exact BPE counter that was most of a turn's CPU
// (#30); a message is now counted once per process: later turns look its count up by its text's
// length and two 64-bit hashes, one of them keyed with a secret drawn at start (a text made to
// collide with another's unkeyed hash, say a known system prompt's, still misses). The memo is
// a fixed table (kSlots entries, about 8 MB, a newer text takes an older one's place), shared by
// every slot, striped over kStripes locks. Texts under kMinBytes are counted directly (cheaper
// than the lookup). Counts stored with history rows (migration 0018) are put in with remember():
// a process that starts, or meets a chat it has not seen, looks them up instead of counting.

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "internal/tokens/token_counter.h"

namespace autonous::tokens {

class MemoCounter final : public TokenCounter {
 public:
  static constexpr size_t kSlots = size_t{1} << 18;
  static constexpr size_t kStripes = 64;
  static constexpr size_t kMinBytes = 64;

  explicit MemoCounter(std::unique_ptr<TokenCounter> inner);

  int64_t count_text(std::string_view text) const override;
  int64_t per_message() const noexcept override { return inner_->per_message(); }
  int64_t per_request() const noexcept override { return inner_->per_request(); }
  std::string_view name() const noexcept override { return inner_->name(); }
  // Exact counts are worth storing: under the inner counter's name and kCountVersion
  // ("o200k_base@1"). A change to what a counter counts raises the version: counts stored
  // before are then counted again, never trusted.
  static constexpr int kCountVersion = 1;
  std::string_view stored_name() const noexcept override { return stored_name_; }
  // Keeps `tokens` as the count of `text` (a stored count: migration 0018), as if counted here,
  // unless the memo holds that text already (its own count stays) or `tokens` is outside
  // [1, bytes] (no byte-level BPE count is: the figure is not this text's).
  void remember(std::string_view text, int64_t tokens) const override;

  // Lookups answered from the memo and texts counted, since start (for tests and benches).
  int64_t hits() const;
  int64_t misses() const;

 private:
  struct Entry {
    uint64_t hash = 0;
    uint64_t keyed = 0;
    uint64_t bytes = 0;  // 0: empty
    int64_t tokens = 0;
  };
  uint64_t keyed_hash(std::string_view text) const noexcept;
  std::unique_ptr<TokenCounter> inner_;
  std::string stored_name_;
  uint64_t secret_;
  mutable std::vector<Entry> table_;
  mutable std::array<std::mutex, kStripes> locks_;
  mutable std::atomic<int64_t> hits_{0};
  mutable std::atomic<int64_t> misses_{0};
};

}  // namespace autonous::tokens
