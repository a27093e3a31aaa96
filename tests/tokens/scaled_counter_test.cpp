#include "internal/tokens/scaled_counter.h"

#include <string>

#include <gtest/gtest.h>

namespace autonous::tokens {
namespace {

TEST(ScaledCounterTest, ScaledCounterMultipliesTextNotFramingAndNeverGoesBelowOne) {
  const CharsOver4Counter inner(3, 3);
  ScaledCounter c(inner);
  EXPECT_EQ(c.count_text(std::string(40, 'a')), 10);
  c.set_scale(1.25);
  EXPECT_EQ(c.count_text(std::string(40, 'a')), 13);  // ceil(12.5)
  EXPECT_EQ(c.per_message(), 3);
  c.set_scale(0.5);
  EXPECT_EQ(c.scale(), 1.0);
  EXPECT_EQ(c.name(), "chars4");
}

}  // namespace
}  // namespace autonous::tokens
