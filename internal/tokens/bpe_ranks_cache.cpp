// BpeRanks' cache of built tables (bpe_ranks.h: load_cached). One file per rank file content:
// a header, the 256 single-byte tokens, the token slots, the pair slots and the token bytes,
// in this machine's layout and this build's hashing (the header says which), mapped read-only
// by every process that loads the same rank file. Every offset in it is checked before it is
// used, so a file that is truncated or made by something else is refused, never read out of
// bounds. The file is written whole (fsync'd), read-only to everyone, under another name and
// renamed; one that anyone but its owner could write, or that is not a regular file, is not
// mapped. It must not be changed in place while processes map it (delete it to rebuild).

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
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
constexpr uint32_t kVersion = 2;
constexpr uint32_t kByteOrder = 0x01020304;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t byte_order;
  uint32_t slot_size;
  uint32_t pair_size;
  char key[64];      // the rank file's SHA-256, hex
  uint64_t hashing;  // BpeRanks::hashing(): the same hash functions as this build's
  uint64_t count;
  uint64_t slots;  // a power of two
  uint64_t pairs;  // a power of two
  uint64_t arena;  // bytes
  uint64_t whole_pieces;
};

bool power_of_two(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

// The cache file's name: the rank file's name, the start of its hash (the whole hash is in
// the header), the format's version and the start of the build's hashing fingerprint, so that
// builds sharing a folder keep a file each.
std::filesystem::path cache_file(const std::string& cache_dir, const std::string& path,
                                 const std::string& key, uint64_t hashing) {
  char fingerprint[9];
  std::snprintf(fingerprint, sizeof fingerprint, "%08x", static_cast<unsigned>(hashing >> 32));
  return std::filesystem::path(cache_dir) /
         (std::filesystem::path(path).filename().string() + "." + key.substr(0, 16) + ".v" +
          std::to_string(kVersion) + "-" + fingerprint + ".bpe");
}

bool hex_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// Whether `name` is a cache file of the rank file `stem` (its name and a dot) of any version
// ("<16 hex>.bpe" before version 2, "<16 hex>.v<N>-<8 hex>.bpe" since), or a part of one.
bool table_of(const std::string& name, const std::string& stem) {
  if (name.rfind(stem, 0) != 0) return false;
  std::string_view rest = std::string_view(name).substr(stem.size());
  if (rest.size() < 16 || !hex_digits(rest.substr(0, 16))) return false;
  rest.remove_prefix(16);
  if (const size_t part = rest.find(".part."); part != std::string_view::npos)
    rest = rest.substr(0, part);
  if (rest == ".bpe") return true;
  if (rest.size() < 4 || rest.substr(0, 2) != ".v" || rest.substr(rest.size() - 4) != ".bpe")
    return false;
  rest = rest.substr(2, rest.size() - 6);  // N-<8 hex>
  const size_t dash = rest.find('-');
  return dash != std::string_view::npos && dash > 0 &&
         std::all_of(rest.begin(), rest.begin() + static_cast<ptrdiff_t>(dash),
                     [](char c) { return c >= '0' && c <= '9'; }) &&
         rest.size() - dash - 1 == 8 && hex_digits(rest.substr(dash + 1));
}

// Writes all of `n` bytes; false on an error.
bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// The same rank file's tables of other contents, versions or builds, and parts left by a
// writer that died, in `dir`: removed once an hour old (a process of another data folder or
// build may still use them). Runs when a table is built.
void remove_stale(const std::string& dir, const std::string& stem,
                  const std::filesystem::path& keep) {
  const auto hour_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name == keep.filename().string() || !table_of(name, stem)) continue;
    std::error_code e;
    if (entry.last_write_time(e) < hour_ago && !e) std::filesystem::remove(entry.path(), e);
  }
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
  h.hashing = hashing();
  h.count = count_;
  h.slots = mask_ + 1;
  h.pairs = pair_mask_ + 1;
  size_t arena = 0;  // the bytes every slot points into: up to the furthest end
  for (size_t i = 0; i <= mask_; ++i)
    arena = std::max(arena, size_t{slots_at_[i].offset} + slots_at_[i].length);
  h.arena = arena;
  h.whole_pieces = whole_pieces_ ? 1 : 0;
  // Written under a name of its own (never an existing file or link), made read-only, flushed
  // to disk, then renamed: a reader sees the whole file or none.
  static std::atomic<unsigned> serial{0};
  std::random_device random;
  const std::string part = file + ".part." + std::to_string(::getpid()) + "." +
                           std::to_string(serial++) + "." + std::to_string(random());
  const int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (fd < 0) throw std::runtime_error("cannot create " + part + ": " + std::strerror(errno));
  const bool written =
      write_all(fd, &h, sizeof h) && write_all(fd, byte_rank_at_, 256 * sizeof(uint32_t)) &&
      write_all(fd, slots_at_, h.slots * sizeof(Slot)) &&
      write_all(fd, pairs_at_, h.pairs * sizeof(PairSlot)) && write_all(fd, arena_at_, arena) &&
      ::fchmod(fd, 0444) == 0 && ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  std::error_code e;
  if (written) std::filesystem::rename(part, file, e);
  if (!written || e) {
    std::error_code ignored;
    std::filesystem::remove(part, ignored);
    throw std::runtime_error("cannot write " + part + ": " +
                             (written ? e.message() : std::string(std::strerror(error))));
  }
  if (const int dir = ::open(std::filesystem::path(file).parent_path().c_str(),
                             O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      dir >= 0) {
    ::fsync(dir);  // the rename too
    ::close(dir);
  }
}

std::optional<BpeRanks> BpeRanks::map(const std::string& file, const std::string& key,
                                      std::string& why, bool& replace) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT) return std::nullopt;  // not made yet: no error
  struct stat st {};
  void* at = MAP_FAILED;
  if (fd >= 0 && ::fstat(fd, &st) == 0) {
    // Another user's sound file is not replaced (nor mapped): `replace` stays false.
    if (!S_ISREG(st.st_mode) || (st.st_mode & 0022) != 0 ||
        (st.st_uid != ::geteuid() && st.st_uid != 0)) {
      why = file + ": not a regular file of this user or root that only its owner may write";
      replace = S_ISREG(st.st_mode) && st.st_uid == ::geteuid();
    } else if (static_cast<size_t>(st.st_size) >= sizeof(Header))
      at = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  }
  if (fd >= 0) ::close(fd);
  if (at == MAP_FAILED) {
    if (why.empty()) why = file + ": too short or cannot be read";
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
  if (h.hashing != hashing()) return refuse("made by a build that hashes otherwise");
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
  if (const char* wrong = r.unsound()) return refuse(wrong);
  return r;
}

const char* BpeRanks::unsound() const noexcept {
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    if (rank(std::string_view(&c, 1)) != byte_rank_at_[b])
      return "the single bytes' tokens disagree";
  }
  for (size_t i = 0; i <= mask_; i += 61) {
    const Slot& s = slots_at_[i];
    if (s.length != 0 && rank(std::string_view(arena_at_ + s.offset, s.length)) != s.rank)
      return "a token is not where its hash says";
  }
  return nullptr;
}

BpeRanks BpeRanks::load_cached(const std::string& path, const std::string& cache_dir,
                               CacheUse* use) {
  CacheUse ignored;
  CacheUse& u = use != nullptr ? *use : ignored;
  u = CacheUse{};
  if (cache_dir.empty()) return load(path);
  const std::string bytes = read(path);
  const std::string key = common::sha256_hex(bytes);
  const std::filesystem::path file = cache_file(cache_dir, path, key, hashing());
  u.file = file.string();
  bool replace = true;
  if (std::optional<BpeRanks> r = map(u.file, key, u.refused, replace)) {
    u.hit = true;
    return std::move(*r);
  }
  BpeRanks r = parse(bytes, path);
  if (!replace) return r;  // another user's file: built here, theirs left alone
  try {
    if (!std::filesystem::exists(cache_dir)) {
      std::filesystem::create_directories(cache_dir);
      std::filesystem::permissions(cache_dir, std::filesystem::perms(0755));
    }
    r.save(u.file, key);
    u.written = true;
  } catch (const std::exception& e) {
    u.error = e.what();
    return r;
  }
  try {
    remove_stale(cache_dir, std::filesystem::path(path).filename().string() + ".", file);
  } catch (const std::exception&) {  // left for the next build
  }
  return r;
}

}  // namespace autonous::tokens
