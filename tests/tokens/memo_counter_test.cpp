#include "internal/tokens/memo_counter.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "internal/tokens/bpe_counter.h"
#include "tests/support/token_data.h"

namespace autonous::tokens {
namespace {

// Counts calls to the inner counter: one token per byte, plus one per 'e' (a count that depends
// on the content, not only on the length the memo's key holds).
class Bytes final : public TokenCounter {
 public:
  explicit Bytes(std::atomic<int>& calls) : calls_(calls) {}
  int64_t count_text(std::string_view text) const override {
    ++calls_;
    return static_cast<int64_t>(text.size() + std::count(text.begin(), text.end(), 'e'));
  }
  int64_t per_message() const noexcept override { return 4; }
  int64_t per_request() const noexcept override { return 3; }
  std::string_view name() const noexcept override { return "bytes"; }

 private:
  std::atomic<int>& calls_;
};

std::string text_of(int i, size_t bytes) {
  std::string s = "message " + std::to_string(i) + " ";
  while (s.size() < bytes) s += static_cast<char>('a' + (s.size() * 7 + i) % 26);
  return s;
}

TEST(MemoCounterTest, ATextIsCountedOnceAndShortTextsEveryTime) {
  std::atomic<int> calls{0};
  const MemoCounter memo(std::make_unique<Bytes>(calls));
  const std::string long_text = text_of(1, 500);
  const auto want = static_cast<int64_t>(500 + std::count(long_text.begin(), long_text.end(), 'e'));
  EXPECT_EQ(memo.count_text(long_text), want);
  EXPECT_EQ(memo.count_text(long_text), want);
  EXPECT_EQ(memo.count_text(std::string(long_text)), want);  // another copy of the same text
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(memo.hits(), 2);
  EXPECT_EQ(memo.misses(), 1);
  memo.count_text("short");
  memo.count_text("short");
  EXPECT_EQ(calls.load(), 3);
  // The framing and the name are the inner counter's.
  EXPECT_EQ(memo.per_message(), 4);
  EXPECT_EQ(memo.per_request(), 3);
  EXPECT_EQ(memo.name(), "bytes");
}

// A stored count (migration 0018) is taken as the count; a short text is counted as before.
TEST(MemoCounterTest, ARememberedCountIsAnsweredWithoutCounting) {
  std::atomic<int> calls{0};
  const MemoCounter memo(std::make_unique<Bytes>(calls));
  EXPECT_EQ(memo.stored_name(), "bytes@1");
  const std::string text = text_of(3, 300);
  memo.remember(text, 42);
  EXPECT_EQ(memo.count_text(text), 42);
  EXPECT_EQ(calls.load(), 0);
  memo.remember("short", 42);
  EXPECT_EQ(memo.count_text("short"), 5);
  memo.remember(text_of(4, 300), -1);  // not a count
  EXPECT_GT(memo.count_text(text_of(4, 300)), 0);
  EXPECT_EQ(calls.load(), 2);
  // A count no byte-level BPE gives (0, or more tokens than bytes) is not taken.
  memo.remember(text_of(5, 300), 0);
  memo.remember(text_of(6, 300), 301);
  EXPECT_GT(memo.count_text(text_of(5, 300)), 0);
  const std::string six = text_of(6, 300);
  EXPECT_EQ(memo.count_text(six),
            static_cast<int64_t>(300 + std::count(six.begin(), six.end(), 'e')));
  EXPECT_EQ(calls.load(), 4);
  // A text the memo counted itself keeps its own count.
  const int64_t own = memo.count_text(text_of(7, 300));
  memo.remember(text_of(7, 300), 9);
  EXPECT_EQ(memo.count_text(text_of(7, 300)), own);
}

TEST(MemoCounterTest, AnEditedTextOfTheSameLengthIsCountedAgain) {
  std::atomic<int> calls{0};
  const MemoCounter memo(std::make_unique<Bytes>(calls));
  std::string text = text_of(2, 200);
  text[100] = 'x';
  const int64_t before = memo.count_text(text);
  text[100] = 'e';
  EXPECT_EQ(memo.count_text(text), before + 1);
  EXPECT_EQ(calls.load(), 2);
}

// More texts than slots: the memo forgets, never answers wrong.
TEST(MemoCounterTest, AFullMemoStaysExact) {
  std::atomic<int> calls{0};
  const MemoCounter memo(std::make_unique<Bytes>(calls));
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < static_cast<int>(MemoCounter::kSlots) + 5000; i += 7) {
      const std::string t = text_of(i, 64 + static_cast<size_t>(i % 300));
      ASSERT_EQ(memo.count_text(t),
                static_cast<int64_t>(t.size() + std::count(t.begin(), t.end(), 'e')))
          << i;
    }
}

// The real counter behind it, from many threads at once: every count equals the bare one.
TEST(MemoCounterTest, ConcurrentSlotsGetTheExactCountsOfTheBareCounter) {
  const auto bare = load_bpe_counter("o200k_base", testing::tokenizer_data_dir());
  const MemoCounter memo(load_bpe_counter("o200k_base", testing::tokenizer_data_dir()));
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i)
    texts.push_back(text_of(i, 64 + static_cast<size_t>(i) * 13) + " 你好，世界 " +
                    std::to_string(i * 7919));
  std::vector<int64_t> want;
  for (const auto& t : texts) want.push_back(bare->count_text(t));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < 8; ++th)
    threads.emplace_back([&, th] {
      for (int round = 0; round < 5; ++round)
        for (size_t i = 0; i < texts.size(); ++i) {
          const size_t k = (i + static_cast<size_t>(th) * 31) % texts.size();
          if (memo.count_text(texts[k]) != want[k]) ++wrong;
        }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(memo.hits(), memo.misses());
}

}  // namespace
}  // namespace autonous::tokens
