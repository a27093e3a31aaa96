// BpeRanks' cache of built tables (bpe_ranks.h: load_cached). One file per rank file content:
// a header, the 256 single-byte tokens, the token slots, the pair slots and the token bytes,
// in this machine's layout (the header says which), mapped read-only by every process that
// loads the same rank file. Every offset in it is checked before it is used, so a file that
// is truncated or made by something else is refused, never read out of bounds.

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/common/sha256.h"
#include "internal/tokens/bpe_ranks.h"

namespace autonous::tokens {
namespace {

constexpr char kMagic[8] = {'a', 'u', 't', 'o', 'B', 'P', 'E', '\0'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kByteOrder = 0x01020304;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t byte_order;
  uint32_t slot_size;
  uint32_t pair_size;
  char key[64];  // the rank file's SHA-256, hex
  uint64_t count;
  uint64_t slots;  // a power of two
  uint64_t pairs;  // a power of two
  uint64_t arena;  // bytes
  uint64_t whole_pieces;
};

bool power_of_two(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

// The cache file's name: the rank file's name and the start of its hash (the whole hash is
// in the header).
std::filesystem::path cache_file(const std::string& cache_dir, const std::string& path,
                                 const std::string& key) {
  return std::filesystem::path(cache_dir) /
         (std::filesystem::path(path).filename().string() + "." + key.substr(0, 16) + ".bpe");
}

}  // namespace

void BpeRanks::save(const std::string& file, const std::string& key) const {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.byte_order = kByteOrder;
  h.slot_size = sizeof(Slot);
  h.pair_size = sizeof(PairSlot);
  std::memcpy(h.key, key.data(), std::min(key.size(), sizeof h.key));
  h.count = count_;
  h.slots = mask_ + 1;
  h.pairs = pair_mask_ + 1;
  size_t arena = 0;  // the bytes every slot points into: up to the furthest end
  for (size_t i = 0; i <= mask_; ++i)
    arena = std::max(arena, size_t{slots_at_[i].offset} + slots_at_[i].length);
  h.arena = arena;
  h.whole_pieces = whole_pieces_ ? 1 : 0;
  // Written under a name of its own, then renamed: a reader sees the whole file or none.
  static std::atomic<unsigned> serial{0};
  const std::string part =
      file + ".part." + std::to_string(::getpid()) + "." + std::to_string(serial++);
  {
    std::ofstream out(part, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out.write(reinterpret_cast<const char*>(byte_rank_at_), 256 * sizeof(uint32_t));
    out.write(reinterpret_cast<const char*>(slots_at_),
              static_cast<std::streamsize>(h.slots * sizeof(Slot)));
    out.write(reinterpret_cast<const char*>(pairs_at_),
              static_cast<std::streamsize>(h.pairs * sizeof(PairSlot)));
    out.write(arena_at_, static_cast<std::streamsize>(arena));
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(part, ignored);
      throw std::runtime_error("cannot write " + part);
    }
  }
  std::error_code e;
  std::filesystem::rename(part, file, e);
  if (e) {
    std::error_code ignored;
    std::filesystem::remove(part, ignored);
    throw std::runtime_error("cannot rename " + part + ": " + e.message());
  }
}

std::optional<BpeRanks> BpeRanks::map(const std::string& file, const std::string& key,
                                      std::string& why) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // not made yet: no error
  struct stat st {};
  void* at = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= sizeof(Header))
    at = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (at == MAP_FAILED) {
    why = file + ": too short or cannot be mapped";
    return std::nullopt;
  }
  const auto size = static_cast<size_t>(st.st_size);
  std::shared_ptr<const void> keep(at, [size](const void* p) {
    ::munmap(const_cast<void*>(p), size);  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  });
  const auto* base = static_cast<const char*>(at);
  Header h{};
  std::memcpy(&h, base, sizeof h);
  const auto refuse = [&](const std::string& reason) -> std::optional<BpeRanks> {
    why = file + ": " + reason;
    return std::nullopt;
  };
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kVersion ||
      h.byte_order != kByteOrder || h.slot_size != sizeof(Slot) || h.pair_size != sizeof(PairSlot))
    return refuse("not a cache file of this version");
  if (key.size() != sizeof h.key || std::memcmp(h.key, key.data(), sizeof h.key) != 0)
    return refuse("made from another rank file");
  if (!power_of_two(h.slots) || !power_of_two(h.pairs) || h.slots > (uint64_t{1} << 32) ||
      h.pairs > (uint64_t{1} << 32) || h.arena > UINT32_MAX || h.count * 2 > h.slots)
    return refuse("bad table sizes");
  const size_t bytes_at = sizeof(Header);
  const size_t slots_at = bytes_at + 256 * sizeof(uint32_t);
  const size_t pairs_at = slots_at + h.slots * sizeof(Slot);
  const size_t arena_at = pairs_at + h.pairs * sizeof(PairSlot);
  if (size != arena_at + h.arena) return refuse("truncated or too long");
  // Every lookup ends at an empty slot and reads bytes inside the arena.
  const auto* slots = reinterpret_cast<const Slot*>(base + slots_at);
  uint64_t used = 0;
  for (uint64_t i = 0; i < h.slots; ++i) {
    if (slots[i].length == 0) continue;
    ++used;
    if (uint64_t{slots[i].offset} + slots[i].length > h.arena)
      return refuse("a token outside the file");
  }
  if (used != h.count) return refuse("the token count disagrees");
  const auto* pairs = reinterpret_cast<const PairSlot*>(base + pairs_at);
  uint64_t empty = 0;
  for (uint64_t i = 0; i < h.pairs; ++i) empty += pairs[i].key == UINT64_MAX ? 1 : 0;
  if (empty == 0) return refuse("no empty pair slot");
  BpeRanks r;
  r.keep_ = std::move(keep);
  r.byte_rank_at_ = reinterpret_cast<const uint32_t*>(base + bytes_at);
  r.slots_at_ = slots;
  r.pairs_at_ = pairs;
  r.arena_at_ = base + arena_at;
  r.mask_ = h.slots - 1;
  r.pair_mask_ = h.pairs - 1;
  r.count_ = h.count;
  r.whole_pieces_ = h.whole_pieces != 0;
  r.mapped_ = true;
  return r;
}

BpeRanks BpeRanks::load_cached(const std::string& path, const std::string& cache_dir,
                               CacheUse* use) {
  CacheUse ignored;
  CacheUse& u = use != nullptr ? *use : ignored;
  u = CacheUse{};
  if (cache_dir.empty()) return load(path);
  const std::string bytes = read(path);
  const std::string key = common::sha256_hex(bytes);
  const std::filesystem::path file = cache_file(cache_dir, path, key);
  u.file = file.string();
  if (std::optional<BpeRanks> r = map(u.file, key, u.error)) {
    u.hit = true;
    return std::move(*r);
  }
  BpeRanks r = parse(bytes, path);
  try {
    std::filesystem::create_directories(cache_dir);
    r.save(u.file, key);
    // The same rank file's earlier contents: no longer read by a new process (one that maps
    // it now keeps its mapping).
    const std::string stem = std::filesystem::path(path).filename().string() + ".";
    for (const auto& entry : std::filesystem::directory_iterator(cache_dir)) {
      const std::string name = entry.path().filename().string();
      if (entry.path() != file && name.rfind(stem, 0) == 0 && name.size() == stem.size() + 20 &&
          name.compare(name.size() - 4, 4, ".bpe") == 0)
        std::filesystem::remove(entry.path());
    }
  } catch (const std::exception& e) {
    if (u.error.empty()) u.error = e.what();
  }
  return r;
}

}  // namespace autonous::tokens
