#include "internal/tokens/bpe_ranks.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <fstream>
#include <queue>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace autonous::tokens {
namespace {

// Pieces at least this long are merged with the heap; below it the scan is faster (tiktoken's
// own rule of thumb is 100 bytes).
constexpr size_t kHeapThreshold = 128;

// Each character's 6 bits, or -1.
constexpr std::array<int8_t, 256> kBase64 = [] {
  std::array<int8_t, 256> t{};
  t.fill(-1);
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
  return t;
}();

// Appends the bytes `in` encodes to `out`; false when `in` is not base64 or encodes nothing.
bool base64_decode(std::string_view in, std::string& out) {
  const size_t before = out.size();
  out.resize(before + in.size() * 3 / 4 + 3);
  char* to = out.data() + before;
  uint32_t acc = 0;
  int bits = 0;
  for (const char c : in) {
    if (c == '=') break;
    const int v = kBase64[static_cast<unsigned char>(c)];
    if (v < 0) {
      out.resize(before);
      return false;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      *to++ = static_cast<char>((acc >> bits) & 0xFFu);
    }
  }
  out.resize(static_cast<size_t>(to - out.data()));
  return out.size() > before;
}

}  // namespace

uint64_t BpeRanks::poly(std::string_view bytes) noexcept {
  uint64_t h = 0;
  for (const char c : bytes) h = h * kBase + static_cast<unsigned char>(c) + 1;
  return h;
}

uint64_t BpeRanks::mix(uint64_t h) noexcept {
  // So that the low bits (the slot index) and the high ones (the tag) depend on every byte.
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 32;
  return h;
}

void BpeRanks::reserve_slots(size_t entries) {
  size_t capacity = 1;
  while (capacity < entries * 2) capacity <<= 1;  // load factor ≤ 0.5
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
}

void BpeRanks::insert(std::string_view bytes, uint32_t rank) {
  arena_.append(bytes);
  insert_tail(bytes.size(), rank);
}

void BpeRanks::insert_tail(size_t length, uint32_t rank) {
  const size_t offset = arena_.size() - length;
  const std::string_view bytes = std::string_view(arena_).substr(offset);
  const uint64_t m = mix(poly(bytes));
  const auto tag = static_cast<uint32_t>(m >> 32);
  size_t i = m & mask_;
  while (slots_[i].length != 0) {
    const Slot& s = slots_[i];
    if (s.tag == tag && s.length == length &&
        std::string_view(arena_).substr(s.offset, s.length) == bytes) {
      slots_[i].rank = rank;
      arena_.resize(offset);
      return;
    }
    i = (i + 1) & mask_;
  }
  if (count_ * 2 >= slots_.size()) throw std::logic_error("BpeRanks: more tokens than reserved");
  slots_[i] = Slot{static_cast<uint32_t>(offset), static_cast<uint32_t>(length), rank, tag};
  ++count_;
}

uint32_t BpeRanks::find(std::string_view bytes, uint64_t h) const noexcept {
  const uint64_t m = mix(h);
  const auto tag = static_cast<uint32_t>(m >> 32);
  size_t i = m & mask_;
  const char* arena = arena_at_;
  while (slots_at_[i].length != 0) {
    const Slot& s = slots_at_[i];
    if (s.tag == tag && s.length == bytes.size() &&
        std::memcmp(arena + s.offset, bytes.data(), bytes.size()) == 0)
      return s.rank;
    i = (i + 1) & mask_;
  }
  return kNoRank;
}

uint32_t BpeRanks::rank(std::string_view bytes) const noexcept {
  if (bytes.empty() || slots_at_ == nullptr) return kNoRank;
  return find(bytes, poly(bytes));
}

void BpeRanks::point_at_build() noexcept {
  arena_at_ = arena_.data();
  slots_at_ = slots_.empty() ? nullptr : slots_.data();
  pairs_at_ = pairs_.data();
  byte_rank_at_ = byte_rank_.data();
}

void BpeRanks::seal() {
  using Built =
      std::tuple<std::string, std::vector<Slot>, std::vector<PairSlot>, std::vector<uint32_t>>;
  auto built = std::make_shared<Built>(std::move(arena_), std::move(slots_), std::move(pairs_),
                                       std::move(byte_rank_));
  arena_.clear();
  slots_.clear();
  pairs_.clear();
  byte_rank_.clear();
  arena_at_ = std::get<0>(*built).data();
  slots_at_ = std::get<1>(*built).data();
  pairs_at_ = std::get<2>(*built).data();
  byte_rank_at_ = std::get<3>(*built).data();
  keep_ = std::move(built);
}

std::string BpeRanks::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read rank file " + path);
  std::ostringstream whole;  // in blocks (an istreambuf_iterator copies byte by byte)
  if (!(whole << in.rdbuf()))
    throw std::runtime_error("cannot read rank file " + path + " (empty or unreadable)");
  return std::move(whole).str();
}

BpeRanks BpeRanks::load(const std::string& path) { return parse(read(path), path); }

BpeRanks BpeRanks::parse(const std::string& file, const std::string& path) {
  if (file.size() > UINT32_MAX) throw std::runtime_error(path + ": larger than 4 GiB");
  BpeRanks r;
  r.reserve_slots(static_cast<size_t>(std::count(file.begin(), file.end(), '\n')) + 1);
  r.arena_.reserve(file.size() * 3 / 4);
  size_t number = 0;
  int64_t last = -1;  // ranks rising line by line cannot repeat (tiktoken's files)
  bool rising = true;
  for (size_t at = 0; at < file.size();) {
    size_t eol = file.find('\n', at);
    if (eol == std::string::npos) eol = file.size();
    std::string_view line = std::string_view(file).substr(at, eol - at);
    at = eol + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const auto space = line.find(' ');
    uint32_t rank = 0;
    const char* end = line.data() + line.size();
    if (space == std::string_view::npos ||
        std::from_chars(line.data() + space + 1, end, rank) != std::from_chars_result{end, {}})
      throw std::runtime_error(path + ":" + std::to_string(number) + ": expected 'BASE64 RANK'");
    if (rank == kNoRank)
      throw std::runtime_error(path + ":" + std::to_string(number) + ": rank " +
                               std::to_string(kNoRank) + " is reserved");
    const size_t before = r.arena_.size();
    if (!base64_decode(line.substr(0, space), r.arena_))
      throw std::runtime_error(path + ":" + std::to_string(number) + ": bad base64");
    r.insert_tail(r.arena_.size() - before, rank);
    rising = rising && rank > last;
    last = rank;
  }
  if (r.count_ < 256) throw std::runtime_error(path + ": too few ranks");
  if (!rising) r.refuse_shared_ranks(path);
  r.point_at_build();
  r.build_pairs();
  r.seal();
  return r;
}

void BpeRanks::refuse_shared_ranks(const std::string& path) const {
  std::vector<uint32_t> ranks;
  ranks.reserve(count_);
  for (const Slot& s : slots_)
    if (s.length != 0) ranks.push_back(s.rank);
  std::sort(ranks.begin(), ranks.end());
  if (const auto twice = std::adjacent_find(ranks.begin(), ranks.end()); twice != ranks.end())
    throw std::runtime_error(path + ": rank " + std::to_string(*twice) + " is given to two tokens");
}

namespace {

uint64_t pair_hash(uint64_t key) noexcept {
  key ^= key >> 31;
  key *= 0x7fb5d329728ea185ULL;
  key ^= key >> 27;
  return key;
}

}  // namespace

void BpeRanks::build_byte_tokens() {
  byte_rank_.assign(256, kNoRank);
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    byte_rank_[static_cast<size_t>(b)] = rank(std::string_view(&c, 1));
    if (byte_rank_[static_cast<size_t>(b)] == kNoRank)
      throw std::runtime_error("the vocabulary lacks the single byte " + std::to_string(b));
  }
}

BpeRanks BpeRanks::from_merges(const std::vector<std::pair<std::string, uint32_t>>& tokens,
                               const std::vector<Merge>& merges, bool whole_pieces) {
  BpeRanks r;
  r.whole_pieces_ = whole_pieces;
  r.reserve_slots(tokens.size());
  uint32_t max_id = 0;
  for (const auto& [b, id] : tokens) {
    if (!b.empty()) r.insert(b, id);
    max_id = std::max(max_id, id);
  }
  r.point_at_build();
  r.build_byte_tokens();
  // The bytes of each id, to find what a merge makes.
  std::vector<std::string_view> bytes(static_cast<size_t>(max_id) + 1);
  const std::string_view arena(r.arena_);
  for (const Slot& s : r.slots_)
    if (s.length != 0) bytes[s.rank] = arena.substr(s.offset, s.length);
  std::vector<std::pair<uint64_t, Joined>> found;
  found.reserve(merges.size());
  std::string joined;
  for (size_t i = 0; i < merges.size(); ++i) {
    const Merge& m = merges[i];
    if (m.left > max_id || m.right > max_id || bytes[m.left].empty() || bytes[m.right].empty())
      throw std::runtime_error("merge " + std::to_string(i) + " joins an unknown token");
    joined.assign(bytes[m.left]);
    joined.append(bytes[m.right]);
    const uint32_t token = r.rank(joined);
    if (token == kNoRank)
      throw std::runtime_error("merge " + std::to_string(i) + " makes no token of the vocabulary");
    found.emplace_back(uint64_t{m.left} << 32 | m.right, Joined{static_cast<uint32_t>(i), token});
  }
  r.index_pairs(found);
  r.seal();
  return r;
}

void BpeRanks::build_pairs() {
  build_byte_tokens();
  // Every way of writing each token as two tokens: (left, right) -> token.
  // The hashes of every prefix give those of every suffix: poly(t[k:]) = poly(t) - poly(t[:k])
  // * kBase^(len - k), so a token of n bytes costs n lookups and no rehashing.
  std::vector<std::pair<uint64_t, Joined>> found;
  found.reserve(count_ * 4);
  std::vector<uint64_t> prefix;
  const std::string_view arena(arena_);
  for (const Slot& s : slots_) {
    if (s.length < 2) continue;
    const std::string_view token = arena.substr(s.offset, s.length);
    const size_t n = token.size();
    prefix.resize(n + 1);
    prefix[0] = 0;
    for (size_t k = 0; k < n; ++k)
      prefix[k + 1] = prefix[k] * kBase + static_cast<unsigned char>(token[k]) + 1;
    uint64_t power = 1;  // kBase^(n - k)
    for (size_t k = n - 1; k >= 1; --k) {
      power *= kBase;
      const uint32_t left = find(token.substr(0, k), prefix[k]);
      if (left == kNoRank) continue;
      const uint32_t right = find(token.substr(k), prefix[n] - prefix[k] * power);
      if (right == kNoRank) continue;
      found.emplace_back(uint64_t{left} << 32 | right, Joined{s.rank, s.rank});
    }
  }
  index_pairs(found);
}

void BpeRanks::index_pairs(const std::vector<std::pair<uint64_t, Joined>>& found) {
  size_t capacity = 1;
  while (capacity < found.size() * 2) capacity <<= 1;
  pairs_.assign(capacity, PairSlot{});
  pair_mask_ = capacity - 1;
  for (const auto& [key, joined] : found) {
    size_t i = pair_hash(key) & pair_mask_;
    while (pairs_[i].key != UINT64_MAX && pairs_[i].key != key) i = (i + 1) & pair_mask_;
    // A pair listed twice keeps its first (lowest) rank, as Hugging Face's merges map does.
    if (pairs_[i].key == key) continue;
    pairs_[i] = PairSlot{key, joined};
  }
}

uint64_t BpeRanks::hashing() noexcept {
  // Change the revision when the tables' meaning changes in a way the layout does not show.
  constexpr uint64_t kRevision = 1;
  return mix(poly("autonous BpeRanks")) ^ pair_hash(0x0102030405060708ULL) ^ kRevision;
}

BpeRanks::Joined BpeRanks::join(uint32_t left, uint32_t right) const noexcept {
  if (left == kNoRank || right == kNoRank) return {};
  const uint64_t key = uint64_t{left} << 32 | right;
  size_t i = pair_hash(key) & pair_mask_;
  while (pairs_at_[i].key != UINT64_MAX) {
    if (pairs_at_[i].key == key) return pairs_at_[i].joined;
    i = (i + 1) & pair_mask_;
  }
  return {};
}

uint32_t BpeRanks::pair_rank(uint32_t left, uint32_t right) const noexcept {
  return join(left, right).rank;
}

int64_t BpeRanks::count_piece(std::string_view piece) const {
  if (piece.empty()) return 0;
  if (whole_pieces_ && rank(piece) != kNoRank) return 1;
  return piece.size() < kHeapThreshold ? count_scan(piece) : count_heap(piece);
}

// tiktoken's merge loop over the parts' tokens: tok[i] is part i's token, pairs[i] the merge of
// joining parts i and i + 1. Join the lowest (leftmost on ties) until no pair has a rank.
int64_t BpeRanks::count_scan(std::string_view piece) const {
  thread_local std::vector<uint32_t> tok;
  thread_local std::vector<Joined> pairs;  // pairs[i]: joining parts i and i + 1
  const size_t n = piece.size();
  tok.resize(n);
  for (size_t i = 0; i < n; ++i) tok[i] = byte_rank_at_[static_cast<unsigned char>(piece[i])];
  pairs.resize(n);
  for (size_t i = 0; i + 1 < n; ++i) pairs[i] = join(tok[i], tok[i + 1]);
  pairs[n - 1] = Joined{};
  size_t parts = n;
  for (;;) {
    uint32_t best = kNoRank;
    size_t at = 0;
    for (size_t i = 0; i + 1 < parts; ++i) {
      if (pairs[i].rank < best) {
        best = pairs[i].rank;
        at = i;
      }
    }
    if (best == kNoRank) break;
    tok[at] = pairs[at].token;
    tok.erase(tok.begin() + static_cast<ptrdiff_t>(at) + 1);
    pairs.erase(pairs.begin() + static_cast<ptrdiff_t>(at) + 1);
    --parts;
    pairs[at] = at + 1 < parts ? join(tok[at], tok[at + 1]) : Joined{};
    if (at > 0) pairs[at - 1] = join(tok[at - 1], tok[at]);
  }
  tok.resize(n);
  pairs.resize(n);
  return static_cast<int64_t>(parts);
}

// The same merge order with a heap of candidate pairs over a linked list of parts. Entries
// are checked when popped: a pair whose ends moved since it was pushed is stale and skipped.
// Ties break on position, as the scan's leftmost rule does.
int64_t BpeRanks::count_heap(std::string_view piece) const {
  const auto n = static_cast<uint32_t>(piece.size());
  std::vector<uint32_t> next(n);  // next part start (n = end), per part start
  std::vector<uint32_t> prev(n);
  std::vector<uint32_t> tok(n);  // the token of the part starting there
  std::vector<bool> alive(n, true);
  for (uint32_t i = 0; i < n; ++i) {
    next[i] = i + 1;
    prev[i] = i == 0 ? UINT32_MAX : i - 1;
    tok[i] = byte_rank_at_[static_cast<unsigned char>(piece[i])];
  }
  struct Candidate {
    uint32_t rank;
    uint32_t token;
    uint32_t left;
    uint32_t end;  // end of the right part when pushed
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](uint32_t left) {
    if (left == UINT32_MAX || left >= n || !alive[left]) return;
    const uint32_t mid = next[left];
    if (mid >= n) return;
    const uint32_t end = next[mid];
    const Joined j = join(tok[left], tok[mid]);
    if (j.rank != kNoRank) heap.push({j.rank, j.token, left, end});
  };
  for (uint32_t i = 0; i + 1 < n; ++i) push(i);
  int64_t parts = n;
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    if (!alive[c.left]) continue;
    const uint32_t mid = next[c.left];
    if (mid >= n || next[mid] != c.end) continue;  // stale
    alive[mid] = false;
    tok[c.left] = c.token;
    next[c.left] = c.end;
    if (c.end < n) prev[c.end] = c.left;
    --parts;
    push(prev[c.left]);
    push(c.left);
  }
  return parts;
}

}  // namespace autonous::tokens
