#pragma once
// BpeRanks: a byte-level BPE vocabulary in memory (token bytes → id, and which pairs of tokens
// merge, in what order) and byte-pair counting of one pre-tokenized piece exactly as tiktoken
// or Hugging Face's BPE model merges it: repeatedly join the adjacent pair of lowest merge rank,
// leftmost first. From a tiktoken rank file every way of writing a token as two tokens merges,
// ranked by the token; from a Hugging Face merges list only the listed pairs, ranked by their
// place in the list. Short pieces use a simple scan; long ones a heap over a linked
// list, so a 1 MiB run of one letter stays O(n log n). Immutable after load; thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autonous::tokens {

class BpeRanks {
 public:
  // Reads a .tiktoken file: lines "BASE64 RANK", one space between, CRLF and blank lines
  // allowed; a later line with the same bytes gives them its rank. Throws std::runtime_error
  // when the file cannot be read or a line is malformed (the message names the file and line):
  // no space, anything but digits after it (another space, a tab), a rank above 4294967294, or
  // no bytes in the base64; and when two tokens are given the same rank.
  static BpeRanks load(const std::string& path);
  // load(), through a cache of the built tables in `cache_dir` (bpe_ranks_cache.cpp): a file
  // named by the rank file's SHA-256, mapped read-only, so that a process starts without
  // building them and the processes of a machine share one copy in memory. A cache file that is
  // missing, stale, truncated or inconsistent is ignored and written again; a cache that cannot
  // be written only costs the build. "" : load(). `use`, when given, says what happened.
  struct CacheUse {
    bool hit = false;      // the tables came from `file`
    std::string file;      // the cache file looked for ("" without a cache)
    std::string refused;   // why a `file` there was not used ("" when none was there)
    std::string error;     // why it could not be written ("" when written, or not tried)
    bool written = false;  // built and written to `file`
  };
  static BpeRanks load_cached(const std::string& path, const std::string& cache_dir,
                              CacheUse* use = nullptr);
  // A Hugging Face BPE model: `tokens` (bytes, id) and `merges` (left id, right id, in the
  // order of the merges list). `whole_pieces` is the model's ignore_merges: a piece that is a
  // token is that one token. Throws std::runtime_error when a single byte has no token or a
  // merge's result is not a token.
  struct Merge {
    uint32_t left;
    uint32_t right;
  };
  static BpeRanks from_merges(const std::vector<std::pair<std::string, uint32_t>>& tokens,
                              const std::vector<Merge>& merges, bool whole_pieces);

  // The rank of `bytes`, or kNoRank.
  uint32_t rank(std::string_view bytes) const noexcept;
  // Tokens tiktoken makes of one piece.
  int64_t count_piece(std::string_view piece) const;
  // The two merge strategies count_piece() chooses between by length; public so tests can
  // check they agree and benchmarks can time them.
  int64_t count_scan(std::string_view piece) const;
  int64_t count_heap(std::string_view piece) const;
  size_t size() const noexcept { return count_; }
  // Whether the tables are a cache file's mapping (load_cached()), not built in this process.
  bool mapped() const noexcept { return mapped_; }

  static constexpr uint32_t kNoRank = UINT32_MAX;

 private:
  struct Slot {
    uint32_t offset = 0;
    uint32_t length = 0;  // 0: empty slot
    uint32_t rank = kNoRank;
    uint32_t tag = 0;  // the high half of the mixed hash: most mismatches skip the bytes
  };
  // Sizes the table for `entries` tokens (load factor at most 0.5).
  void reserve_slots(size_t entries);
  void insert(std::string_view bytes, uint32_t rank);
  // Inserts the arena's last `length` bytes (just appended); a token already there takes the
  // new rank and the bytes are given back.
  void insert_tail(size_t length, uint32_t rank);
  // Throws when two tokens have the same rank (a merge's token is known by its rank).
  void refuse_shared_ranks(const std::string& path) const;
  // The rank of `bytes`, whose polynomial hash (poly()) is `h`.
  uint32_t find(std::string_view bytes, uint64_t h) const noexcept;
  // The rank of the token made of tokens `left` and `right` side by side, or kNoRank. During a
  // merge every part is a token, so this answers "rank of the joined bytes" with one integer
  // probe instead of hashing and comparing bytes.
  uint32_t pair_rank(uint32_t left, uint32_t right) const noexcept;
  // The same lookup, also giving the joined token (the rank's own token from a rank file).
  struct Joined {
    uint32_t rank = kNoRank;
    uint32_t token = kNoRank;
  };
  Joined join(uint32_t left, uint32_t right) const noexcept;
  void build_byte_tokens();
  void build_pairs();
  void index_pairs(const std::vector<std::pair<uint64_t, Joined>>& found);
  // A polynomial hash, h = h * kBase + byte + 1 over the bytes, so that a build can hash every
  // prefix and suffix of a token from its prefixes' hashes; mix() spreads it over the slots.
  static constexpr uint64_t kBase = 0x9E3779B97F4A7C15ULL;
  static uint64_t poly(std::string_view bytes) noexcept;
  static uint64_t mix(uint64_t h) noexcept;
  // A fingerprint of the hash functions above and the pair table's: a cache file made by a
  // build whose lookups probe other slots is refused (bpe_ranks_cache.cpp).
  static uint64_t hashing() noexcept;

  struct PairSlot {
    uint64_t key = UINT64_MAX;  // left << 32 | right; UINT64_MAX: empty
    Joined joined;
  };
  // A rank file's bytes; throws std::runtime_error when it cannot be read.
  static std::string read(const std::string& path);
  // Parses a rank file's bytes (load()); `path` names it in errors.
  static BpeRanks parse(const std::string& file, const std::string& path);
  // The cache file (bpe_ranks_cache.cpp): written whole under another name, then renamed.
  void save(const std::string& file, const std::string& key) const;
  // The tables of a cache file whose key is `key`, or nullopt (a reason in `why`; `replace`
  // set false when the file is another user's, to be left alone).
  static std::optional<BpeRanks> map(const std::string& file, const std::string& key,
                                     std::string& why, bool& replace);
  // Whether mapped tables answer as built, their bounds checked: each single byte is its token,
  // and the token of every 61st slot is found (damage their sizes do not show). nullptr when
  // they do, else what is wrong.
  const char* unsound() const noexcept;
  // While building: the lookups read the vectors below. seal(): the built tables move to the
  // heap, shared by copies (immutable from then on).
  void point_at_build() noexcept;
  void seal();

  // Building (load(), from_merges()); empty once sealed.
  std::string arena_;
  std::vector<Slot> slots_;
  std::vector<PairSlot> pairs_;
  std::vector<uint32_t> byte_rank_;  // the token of each single byte
  // What the lookups read: the built tables, or a cache file's mapping, kept by `keep_`.
  std::shared_ptr<const void> keep_;
  const char* arena_at_ = nullptr;
  const Slot* slots_at_ = nullptr;
  const PairSlot* pairs_at_ = nullptr;
  const uint32_t* byte_rank_at_ = nullptr;
  size_t pair_mask_ = 0;
  size_t mask_ = 0;
  size_t count_ = 0;
  bool whole_pieces_ = true;
  bool mapped_ = false;
};

}  // namespace autonous::tokens
