#include "internal/tokens/bpe_counter.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/common/utf8.h"
#include "tests/support/temp_dir.h"
#include "tests/support/token_data.h"

namespace autonous::tokens {
namespace {

const std::string kCorpus = std::string(AUTONOUS_SOURCE_DIR) + "/tests/data/tokens";

const BpeCounter& counter(const std::string& encoding) {
  static const auto cl100k = load_bpe_counter("cl100k_base", testing::tokenizer_data_dir());
  static const auto o200k = load_bpe_counter("o200k_base", testing::tokenizer_data_dir());
  return encoding == "cl100k_base" ? *cl100k : *o200k;
}

std::vector<std::string> pieces(std::string_view text, SplitPattern p) {
  std::vector<std::string> out;
  pretokenize(text, p, [&](std::string_view s) { out.emplace_back(s); });
  return out;
}

TEST(BpeCounterTest, MatchesTiktokenOnEveryCorpusAndHoldoutFileForBothEncodings) {
  const auto expected = nlohmann::json::parse(testing::read_file(kCorpus + "/expected.json"));
  ASSERT_GE(expected["files"].size(), 40u);
  for (const auto& [file, counts] : expected["files"].items()) {
    const std::string text = common::sanitize_utf8(testing::read_file(kCorpus + "/" + file));
    for (const std::string encoding : {"cl100k_base", "o200k_base"}) {
      EXPECT_EQ(counter(encoding).count_text(text), counts[encoding].get<int64_t>())
          << file << " " << encoding;
    }
  }
}

TEST(BpeCounterTest, OneMebibyteOfOneLetterIsOneTokenPerEightLetters) {
  // One pre-token piece of 1 MiB: tiktoken's quadratic merge takes minutes or panics here.
  const std::string run(1 << 20, 'a');
  EXPECT_EQ(counter("cl100k_base").count_text(run), 131072);
  EXPECT_EQ(counter("o200k_base").count_text(run), 131072);
}

TEST(BpeCounterTest, HeapAndScanMergesAgreeOnRandomPieces) {
  std::mt19937 rng(11);
  const std::string alphabet = "aaaabbbcdeeeeefghiiijklmnoooprssstttuuvwxyz  ";
  for (const std::string encoding : {"cl100k_base", "o200k_base"}) {
    const BpeRanks& ranks = counter(encoding).ranks();
    for (int round = 0; round < 300; ++round) {
      std::string piece;
      const size_t n = 2 + rng() % 400;
      for (size_t i = 0; i < n; ++i) piece += alphabet[rng() % alphabet.size()];
      if (round % 3 == 0) piece = "\xE4\xBD\xA0\xE5\xA5\xBD" + piece;  // multi-byte too
      EXPECT_EQ(ranks.count_scan(piece), ranks.count_heap(piece)) << encoding << " " << piece;
    }
  }
}

TEST(BpeCounterTest, ChatFramingIsThreeAndTheRolePerMessageAndThreePerRequest) {
  // OpenAI's own count (tiktoken's num_tokens_from_messages): 3 per message, plus the role's
  // tokens, plus 3 for the reply primer.
  const auto& c = counter("o200k_base");
  for (const char* role : {"system", "developer", "user", "assistant", "tool"})
    EXPECT_EQ(c.count_text(role), 1) << role;
  const std::vector<common::Message> m = {{common::Role::kSystem, "Be brief.", 0},
                                          {common::Role::kUser, "hello", 0}};
  EXPECT_EQ(c.count_prompt(m), 3 + (c.count_text("Be brief.") + 3 + c.count_text("system")) +
                                   (c.count_text("hello") + 3 + c.count_text("user")));
  EXPECT_EQ(c.name(), "o200k_base");
}

TEST(BpeCounterTest, MissingRankFilesAndUnknownEncodingsAreErrors) {
  EXPECT_THROW(load_bpe_counter("cl100k_base", "/nonexistent"), std::runtime_error);
  EXPECT_THROW(load_bpe_counter("p50k_base", testing::tokenizer_data_dir()), std::invalid_argument);
}

// A rank file in `dir` of the 256 single bytes (ranks 0-255) and `extra` lines after them.
std::string rank_file(const testing::TempDir& dir, const std::string& name,
                      const std::string& extra) {
  static const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string path = dir.file(name);
  std::ofstream out(path, std::ios::binary);
  for (int b = 0; b < 256; ++b)  // one byte is 2 base64 characters and "=="
    out << kB64[b >> 2] << kB64[(b & 3) << 4] << "== " << b << "\n";
  out << extra;
  return path;
}

TEST(BpeRanksTest, AHandWrittenFileMergesByItsRanksAndLaterDuplicatesWin) {
  // "ab" (YWI=) 256, "abc" (YWJj) 257, "bc" (YmM=) 300 listed, then "bc" again as 258; a CRLF,
  // a blank line and a last line without its newline are fine.
  const testing::TempDir dir;
  const BpeRanks r =
      BpeRanks::load(rank_file(dir, "ok", "YWI= 256\r\nYWJj 257\n\nYmM= 300\nYmM= 258"));
  EXPECT_EQ(r.size(), 259U);
  EXPECT_EQ(r.rank("ab"), 256U);
  EXPECT_EQ(r.rank("bc"), 258U);
  EXPECT_EQ(r.rank("abc"), 257U);
  EXPECT_EQ(r.rank("ca"), BpeRanks::kNoRank);
  EXPECT_EQ(r.rank(std::string(1, '\0')), 0U);
  EXPECT_EQ(r.count_piece("abc"), 1);    // a token: one (tiktoken's whole-piece rule)
  EXPECT_EQ(r.count_scan("abc"), 1);     // merged: ab (256) first, then ab + c makes abc
  EXPECT_EQ(r.count_piece("abcab"), 2);  // abc, ab
  EXPECT_EQ(r.count_piece("cbc"), 2);    // c, bc
  EXPECT_EQ(r.count_scan("abcbcab"), r.count_heap("abcbcab"));
}

TEST(BpeRanksTest, AMalformedRankFileNamesItsLine) {
  const testing::TempDir dir;
  const auto refused = [&dir](const std::string& name, const std::string& extra, const char* why) {
    const std::string path = rank_file(dir, name, extra);
    try {
      (void)BpeRanks::load(path);
      ADD_FAILURE() << name << ": loaded";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(path + ":257: " + why), std::string::npos) << e.what();
    }
  };
  refused("no-rank", "YWI=\n", "expected 'BASE64 RANK'");
  refused("bad-rank", "YWI= 25x\n", "expected 'BASE64 RANK'");
  refused("big-rank", "YWI= 4294967296\n", "expected 'BASE64 RANK'");
  refused("bad-base64", "Y*I= 256\n", "bad base64");
  refused("empty-token", "= 256\n", "bad base64");
  refused("reserved-rank", "YWI= 4294967295\n", "rank 4294967295 is reserved");
  refused("two-spaces", "YWI=  256\n", "expected 'BASE64 RANK'");
  EXPECT_THROW((void)BpeRanks::load("/nonexistent/ranks.tiktoken"), std::runtime_error);
  try {
    (void)BpeRanks::load(rank_file(dir, "shared-rank", "YWI= 256\nYmM= 256\n"));
    ADD_FAILURE() << "two tokens of one rank loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 256 is given to two tokens"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)BpeRanks::load(dir.path().string()), std::runtime_error);  // a folder
  const std::string few = dir.file("few");
  std::ofstream(few) << "YQ== 0\n";
  EXPECT_THROW((void)BpeRanks::load(few), std::runtime_error);
}

// The built tables through a cache file (BpeRanks::load_cached).
TEST(BpeRanksCacheTest, TheSecondLoadMapsTheFirstsTablesAndCountsAsTiktokenDoes) {
  const testing::TempDir dir;
  const std::string cache = dir.file("cache");
  tokens::BpeRanks::CacheUse use;
  const auto built = load_bpe_counter("o200k_base", testing::tokenizer_data_dir(), cache, &use);
  EXPECT_FALSE(use.hit);
  EXPECT_EQ(use.error, "");
  ASSERT_TRUE(std::filesystem::exists(use.file)) << use.file;
  EXPECT_FALSE(built->ranks().mapped());
  const auto mapped = load_bpe_counter("o200k_base", testing::tokenizer_data_dir(), cache, &use);
  EXPECT_TRUE(use.hit) << use.error;
  EXPECT_TRUE(mapped->ranks().mapped());
  EXPECT_EQ(mapped->ranks().size(), built->ranks().size());
  const auto expected = nlohmann::json::parse(testing::read_file(kCorpus + "/expected.json"));
  for (const auto& [file, counts] : expected["files"].items()) {
    const std::string text = common::sanitize_utf8(testing::read_file(kCorpus + "/" + file));
    EXPECT_EQ(mapped->count_text(text), counts["o200k_base"].get<int64_t>()) << file;
  }
  const std::string run(4096, 'a');  // the heap's merge
  EXPECT_EQ(mapped->count_text(run), 512);
  // A copy shares the mapping, which outlives the original.
  std::optional<BpeRanks> copy;
  {
    const auto again = load_bpe_counter("o200k_base", testing::tokenizer_data_dir(), cache);
    copy = again->ranks();
  }
  EXPECT_EQ(copy->count_piece(" tokenizer"), built->ranks().count_piece(" tokenizer"));
}

TEST(BpeRanksCacheTest, AChangedRankFileIsBuiltAgainAndItsOldTablesRemoved) {
  const testing::TempDir dir;
  const std::string cache = dir.file("cache");
  const std::string path = rank_file(dir, "r", "YWI= 256\n");
  BpeRanks::CacheUse first;
  EXPECT_EQ(BpeRanks::load_cached(path, cache, &first).rank("abc"), BpeRanks::kNoRank);
  rank_file(dir, "r", "YWI= 256\nYWJj 257\n");  // the same name, new contents
  BpeRanks::CacheUse second;
  const BpeRanks r = BpeRanks::load_cached(path, cache, &second);
  EXPECT_FALSE(second.hit);
  EXPECT_NE(second.file, first.file);
  EXPECT_EQ(r.rank("abc"), 257U);
  EXPECT_EQ(r.count_piece("abcab"), 2);
  EXPECT_TRUE(BpeRanks::load_cached(path, cache, &second).mapped());
  // The old tables stay an hour (a process of another data folder may use them), as does a
  // part a writer left; older, they go at the next build.
  EXPECT_TRUE(std::filesystem::exists(first.file));
  const std::string part = second.file + ".part.1.2.3";
  std::ofstream(part) << "left by a writer that died";
  const auto old = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  std::filesystem::last_write_time(first.file, old);
  std::filesystem::last_write_time(part, old);
  rank_file(dir, "r", "YWI= 256\nYWJj 257\nYmM= 258\n");
  BpeRanks::CacheUse third;
  EXPECT_EQ(BpeRanks::load_cached(path, cache, &third).rank("bc"), 258U);
  EXPECT_FALSE(std::filesystem::exists(first.file));
  EXPECT_FALSE(std::filesystem::exists(part));
  EXPECT_TRUE(std::filesystem::exists(second.file));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(cache), {}), 2);
}

// The cache file's layout (bpe_ranks_cache.cpp): a header of 136 bytes (the hash's hex at 24,
// the token count at 96, the table sizes at 104 and 112), 256 ranks of 4 bytes, the token
// slots (16 bytes: offset, length, rank, tag), the pair slots (16 bytes: key, rank, token).
constexpr size_t kCount = 96, kSlots = 104, kPairs = 112, kTables = 136 + 1024;
template <typename T>
T field(const std::string& file, size_t at) {
  T v{};
  std::memcpy(&v, file.data() + at, sizeof v);
  return v;
}
template <typename T>
void set_field(std::string& file, size_t at, T v) {
  std::memcpy(file.data() + at, &v, sizeof v);
}

TEST(BpeRanksCacheTest, ABrokenOrForeignCacheFileIsRefusedAndWrittenAgain) {
  const testing::TempDir dir;
  const std::string cache = dir.file("cache");
  const std::string path = rank_file(dir, "r", "YWI= 256\nYWJj 257\n");
  BpeRanks::CacheUse use;
  (void)BpeRanks::load_cached(path, cache, &use);
  const std::string good = testing::read_file(use.file);
  ASSERT_GT(good.size(), kTables);
  EXPECT_EQ(std::filesystem::status(use.file).permissions() & std::filesystem::perms::all,
            std::filesystem::perms(0444));
  const auto slots = field<uint64_t>(good, kSlots);
  const auto pairs = field<uint64_t>(good, kPairs);
  const auto refused_for = [&](const std::string& bytes, const std::string& why) {
    std::filesystem::remove(use.file);  // read-only: written anew
    std::ofstream(use.file, std::ios::binary) << bytes;
    std::filesystem::permissions(use.file, std::filesystem::perms(0644));  // whatever the umask
    const BpeRanks r = BpeRanks::load_cached(path, cache, &use);
    EXPECT_FALSE(use.hit) << why;
    EXPECT_NE(use.refused.find(why), std::string::npos) << use.refused;
    EXPECT_TRUE(use.written) << use.error;
    EXPECT_EQ(r.rank("abc"), 257U);
    EXPECT_EQ(testing::read_file(use.file), good) << why;  // written again
    EXPECT_TRUE(BpeRanks::load_cached(path, cache, &use).mapped()) << why;
  };
  refused_for(good.substr(0, good.size() - 1), "truncated");
  refused_for("", "too short");
  refused_for(std::string(good.size(), 'x'), "not a cache file");
  std::string other = good;
  other[40] = other[40] == 'f' ? 'e' : 'f';  // a hex digit of the rank file's hash
  refused_for(other, "made from another rank file");
  std::string hashing = good;
  hashing[88] = static_cast<char>(hashing[88] ^ 1);  // the build's hashing fingerprint
  refused_for(hashing, "made by a build that hashes otherwise");
  std::string sizes = good;
  set_field<uint64_t>(sizes, kSlots, slots - 1);  // not a power of two
  refused_for(sizes, "bad table sizes");
  std::string count = good;
  set_field<uint64_t>(count, kCount, field<uint64_t>(good, kCount) - 1);
  refused_for(count, "the token count disagrees");
  std::string full = good;  // every pair slot used: a lookup would never end
  for (uint64_t i = 0; i < pairs; ++i) set_field<uint64_t>(full, kTables + slots * 16 + i * 16, i);
  refused_for(full, "no empty pair slot");
  std::string outside = good;  // the first used slot points past the token bytes
  std::string moved = good;    // ... or at other bytes of the same length
  for (uint64_t i = 0; i < slots; ++i) {
    const size_t at = kTables + i * 16;
    if (field<uint32_t>(good, at + 4) != 1) continue;  // a single byte's token
    set_field<uint32_t>(outside, at, 1U << 30);
    set_field<uint32_t>(moved, at, field<uint32_t>(good, at) ^ 1U);
    break;
  }
  refused_for(outside, "a token outside the file");
  refused_for(moved, "disagree");
  // Not mapped: a file others may write, a link.
  std::filesystem::permissions(use.file, std::filesystem::perms(0666));
  (void)BpeRanks::load_cached(path, cache, &use);
  EXPECT_NE(use.refused.find("only its owner may write"), std::string::npos) << use.refused;
  EXPECT_TRUE(BpeRanks::load_cached(path, cache, &use).mapped());
  const std::string elsewhere = dir.file("elsewhere.bpe");
  std::filesystem::copy_file(use.file, elsewhere);
  std::filesystem::remove(use.file);
  std::filesystem::create_symlink(elsewhere, use.file);
  (void)BpeRanks::load_cached(path, cache, &use);
  EXPECT_FALSE(use.hit);
  EXPECT_FALSE(std::filesystem::is_symlink(use.file));  // replaced by a file of its own
  if (::geteuid() == 0) {  // another user's file is neither mapped nor replaced
    ASSERT_EQ(::chown(use.file.c_str(), 65534, 65534), 0);
    const BpeRanks r = BpeRanks::load_cached(path, cache, &use);
    EXPECT_FALSE(use.hit);
    EXPECT_FALSE(use.written);
    EXPECT_NE(use.refused.find("this user or root"), std::string::npos) << use.refused;
    EXPECT_EQ(r.rank("abc"), 257U);
    struct stat st {};
    ASSERT_EQ(::stat(use.file.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 65534U);  // left as it was
  }
}

TEST(BpeRanksCacheTest, ACacheThatCannotBeWrittenOnlyCostsTheBuild) {
  const testing::TempDir dir;
  std::ofstream(dir.file("plain")) << "a file, not a folder";
  const std::string path = rank_file(dir, "r", "YWI= 256\n");
  BpeRanks::CacheUse use;
  const BpeRanks r = BpeRanks::load_cached(path, dir.file("plain") + "/cache", &use);
  EXPECT_FALSE(use.hit);
  EXPECT_NE(use.error, "");
  EXPECT_EQ(r.rank("ab"), 256U);
  EXPECT_EQ(BpeRanks::load_cached(path, "", &use).rank("ab"), 256U);  // no cache
  EXPECT_EQ(use.file, "");
  EXPECT_THROW((void)BpeRanks::load_cached(dir.file("missing"), dir.file("cache")),
               std::runtime_error);
}

TEST(PretokenizerTest, SplitsLikeTheCl100kPattern) {
  using V = std::vector<std::string>;
  const auto p = SplitPattern::kCl100k;
  EXPECT_EQ(pieces("Hello world", p), (V{"Hello", " world"}));
  EXPECT_EQ(pieces("  hello", p), (V{" ", " hello"}));  // \s+(?!\S) leaves one space
  EXPECT_EQ(pieces("don't", p), (V{"don", "'t"}));
  EXPECT_EQ(pieces("12345", p), (V{"123", "45"}));
  EXPECT_EQ(pieces("a\n\n  b", p), (V{"a", "\n\n", " ", " b"}));
  EXPECT_EQ(pieces("x !!!\n\ny", p), (V{"x", " !!!\n\n", "y"}));
  EXPECT_EQ(pieces("end  ", p), (V{"end", "  "}));
}

TEST(PretokenizerTest, SplitsLikeTheO200kPattern) {
  using V = std::vector<std::string>;
  const auto p = SplitPattern::kO200k;
  EXPECT_EQ(pieces("HelloWorld", p), (V{"Hello", "World"}));  // case changes split words
  EXPECT_EQ(pieces("don't", p), (V{"don't"}));                // contractions stay attached
  EXPECT_EQ(pieces("ABCdef", p), (V{"ABCdef"}));
  EXPECT_EQ(pieces("a/b//c", p), (V{"a", "/b", "//", "c"}));
}

TEST(PretokenizerTest, PiecesAlwaysConcatenateToTheInput) {
  const std::string text =
      common::sanitize_utf8(testing::read_file(kCorpus + "/corpus/mixed_chat.txt"));
  for (const auto p : {SplitPattern::kCl100k, SplitPattern::kO200k}) {
    std::string joined;
    for (const auto& s : pieces(text, p)) joined += s;
    EXPECT_EQ(joined, text);
  }
}

}  // namespace
}  // namespace autonous::tokens
