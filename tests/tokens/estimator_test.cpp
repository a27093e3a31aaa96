#include "internal/tokens/estimator.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "internal/common/utf8.h"
#include "internal/tokens/bpe_counter.h"
#include "tests/support/token_data.h"

namespace autonous::tokens {
namespace {

// corpus/ is what the weights were fitted on; holdout/ (other scripts and shapes: Armenian,
// Georgian, Amharic, Tamil, Bengali, Ukrainian, Turkish, Polish, Persian, tracebacks, YAML,
// paths) never was.
TEST(EstimateCounterTest, NeverUnderCountsByMoreThanTenPercentInEitherEncodingFittedOrNot) {
  const auto cl = load_bpe_counter("cl100k_base", testing::tokenizer_data_dir());
  const auto o2 = load_bpe_counter("o200k_base", testing::tokenizer_data_dir());
  const EstimateCounter est;
  int files = 0;
  for (const char* folder : {"corpus", "holdout"}) {
    const std::filesystem::path dir =
        std::string(AUTONOUS_SOURCE_DIR) + "/tests/data/tokens/" + folder;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string text = common::sanitize_utf8(testing::read_file(e.path()));
      // The whole file and message-sized slices of it.
      std::vector<std::string> samples = {text};
      for (size_t at = 0; at + 400 < text.size(); at += 400)
        samples.push_back(text.substr(at, common::prefix_bytes(text.substr(at), 120)));
      for (const auto& s : samples) {
        const auto e1 = static_cast<double>(est.count_text(s));
        EXPECT_GE(e1, 0.9 * static_cast<double>(cl->count_text(s))) << e.path() << " cl100k";
        EXPECT_GE(e1, 0.9 * static_cast<double>(o2->count_text(s))) << e.path() << " o200k";
      }
      ++files;
    }
  }
  EXPECT_GE(files, 45);
}

TEST(EstimateCounterTest, IsFarCloserThanCharsOver4OnChinese) {
  const auto o2 = load_bpe_counter("o200k_base", testing::tokenizer_data_dir());
  const std::string zh = "我们的面包店每天早上七点开门，顾客从黎明就开始排队。";
  const int64_t exact = o2->count_text(zh);
  EXPECT_GE(EstimateCounter().count_text(zh), exact);
  EXPECT_LT(CharsOver4Counter().count_text(zh), exact / 2);  // the seed's 3x under-count
}

TEST(EstimateCounterTest, EmptyTextIsFreeAndFramingIsOpenAIs) {
  const EstimateCounter est;
  EXPECT_EQ(est.count_text(""), 0);
  EXPECT_EQ(est.per_message(), 4);
  EXPECT_EQ(est.per_request(), 3);
  EXPECT_EQ(est.name(), "estimate");
}

TEST(EstimateCounterTest, FeaturesCountClassesRunsAndCaseChanges) {
  const auto f = estimator_features("camelCase 123 你好 😀!!");
  EXPECT_EQ(f[kFeatAsciiLetter], 9);
  EXPECT_EQ(f[kFeatAsciiDigit], 3);
  EXPECT_EQ(f[kFeatHan], 2);
  EXPECT_EQ(f[kFeatOther], 1);
  EXPECT_EQ(f[kFeatAsciiPunct], 2);
  EXPECT_EQ(f[kFeatSpace], 3);
  EXPECT_EQ(f[kFeatCaseChange], 1);
  EXPECT_EQ(f[kFeatLetterRun], 2);  // "camelCase" and "你好"
  EXPECT_EQ(f[kFeatDigitRun], 1);
  EXPECT_EQ(f[kFeatPunctRun], 1);
}

}  // namespace
}  // namespace autonous::tokens
