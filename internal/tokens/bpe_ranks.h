#pragma once
// BpeRanks: a tiktoken rank file in memory (token bytes → merge rank), and byte-pair counting
// of one pre-tokenized piece exactly as tiktoken merges it: repeatedly join the adjacent pair of
// lowest rank, leftmost first. Short pieces use a simple scan; long ones a heap over a linked
// list, so a 1 MiB run of one letter stays O(n log n). Immutable after load; thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace autonous::tokens {

class BpeRanks {
 public:
  // Reads a .tiktoken file (lines "BASE64 RANK"). Throws std::runtime_error when the file
  // cannot be read or a line is malformed (the message names the file and line).
  static BpeRanks load(const std::string& path);

  // The rank of `bytes`, or kNoRank.
  uint32_t rank(std::string_view bytes) const noexcept;
  // Tokens tiktoken makes of one piece.
  int64_t count_piece(std::string_view piece) const;
  // The two merge strategies count_piece() chooses between by length; public so tests can
  // check they agree and benchmarks can time them.
  int64_t count_scan(std::string_view piece) const;
  int64_t count_heap(std::string_view piece) const;
  size_t size() const noexcept { return count_; }

  static constexpr uint32_t kNoRank = UINT32_MAX;

 private:
  struct Slot {
    uint32_t offset = 0;
    uint32_t length = 0;  // 0: empty slot
    uint32_t rank = kNoRank;
  };
  void insert(std::string_view bytes, uint32_t rank);
  // The rank of the token made of tokens `left` and `right` side by side, or kNoRank. During a
  // merge every part is a token, so this answers "rank of the joined bytes" with one integer
  // probe instead of hashing and comparing bytes.
  uint32_t pair_rank(uint32_t left, uint32_t right) const noexcept;
  void build_pairs();
  static uint64_t hash(std::string_view bytes) noexcept;

  std::string arena_;
  std::vector<Slot> slots_;
  struct PairSlot {
    uint64_t key = UINT64_MAX;  // left << 32 | right; UINT64_MAX: empty
    uint32_t rank = kNoRank;
  };
  std::vector<PairSlot> pairs_;
  size_t pair_mask_ = 0;
  std::vector<uint32_t> byte_rank_;  // the token of each single byte
  size_t mask_ = 0;
  size_t count_ = 0;
};

}  // namespace autonous::tokens
