#include "internal/engine/calibration_store.h"

#include <gtest/gtest.h>

#include "internal/backend/sqlite/stores.h"
#include "tests/support/test_db.h"

namespace autonous::store {
namespace {

TEST(CalibrationRuleTest, RisesAtOnceFallsPartOfTheWayAndIgnoresTheImplausible) {
  using engine::calibration_next;
  // Estimated 100 at scale 1, the API counted 130: aimed 5 % above, 1.365, at once.
  EXPECT_NEAR(*calibration_next(1.0, 100, 130), 1.365, 1e-9);
  // At most twofold a reply.
  EXPECT_DOUBLE_EQ(*calibration_next(1.0, 100, 500), 2.0);
  // Counted 42 for 100 (Llama 3's English against the estimate): the aim is 0.441; two thirds
  // of the way from 1.0.
  EXPECT_NEAR(*calibration_next(1.0, 100, 42), 1.0 - (1.0 - 0.441) * 2.0 / 3.0, 1e-9);
  // On its aim (estimated 105 at 1.05 for 100 counted): no write.
  EXPECT_FALSE(calibration_next(1.05, 105, 100));
  // Implausible: a scale past 8 or below 0.25 would be needed; nothing counted or estimated.
  EXPECT_FALSE(calibration_next(1.0, 100, 1000000));
  EXPECT_FALSE(calibration_next(1.0, 100, 10));
  EXPECT_FALSE(calibration_next(1.0, 0, 100));
  EXPECT_FALSE(calibration_next(1.0, 100, 0));
  // A poisoned scale in use counts as 1.0.
  EXPECT_NEAR(*calibration_next(2.9e17, 100, 130), 1.365, 1e-9);
  EXPECT_DOUBLE_EQ(engine::calibration_applied(0.1), 1.0);
  EXPECT_DOUBLE_EQ(engine::calibration_applied(0.5), 0.5);
}

TEST(CalibrationRuleTest, ConvergesWithinTheBoundsInAFewReplies) {
  // A server that counts 0.42 of the estimate, or 2.5 times it: after four replies the estimate
  // is at most 15 % above and never below what the server counts.
  for (const double truth : {0.42, 0.8, 1.0, 1.3, 2.5}) {
    double scale = 1.0;
    for (int reply = 0; reply < 4; ++reply) {
      const auto estimated = static_cast<int64_t>(10000 * scale);
      const auto actual = static_cast<int64_t>(10000 * truth);
      scale = engine::calibration_next(scale, estimated, actual).value_or(scale);
    }
    const double over = scale / truth;
    EXPECT_GE(over, 1.0) << truth;
    EXPECT_LE(over, 1.15) << truth;
  }
}

TEST(CalibrationStoreTest, ScaleIsKeptPerEndpointAndModelAndMovesBothWays) {
  testing::TestDb t;
  EXPECT_EQ(calibration_scale(t.db(), "http://a", "m"), 1.0);
  EXPECT_NEAR(calibrate(t.db(), "http://a", "m", 1.0, 100, 130), 1.365, 1e-9);
  EXPECT_NEAR(calibration_scale(t.db(), "http://a", "m"), 1.365, 1e-9);
  // Another endpoint, another model: their own.
  EXPECT_EQ(calibration_scale(t.db(), "http://b", "m"), 1.0);
  EXPECT_EQ(calibration_scale(t.db(), "http://a", "other"), 1.0);
  // Down part of the way.
  const double lowered = calibrate(t.db(), "http://a", "m", 1.365, 136, 60);
  EXPECT_LT(lowered, 1.0);
  EXPECT_NEAR(calibration_scale(t.db(), "http://a", "m"), lowered, 1e-9);
  EXPECT_EQ(t.db()
                .execAndGet("SELECT raised || '/' || lowered FROM token_calibration WHERE "
                            "endpoint = 'http://a' AND model = 'm'")
                .getString(),
            "1/1");
  // A row from before migration 0012 (endpoint '') applies until the endpoint has its own.
  t.db().exec("INSERT INTO token_calibration(endpoint, model, scale) VALUES ('', 'old', 1.7)");
  EXPECT_DOUBLE_EQ(calibration_scale(t.db(), "http://c", "old"), 1.7);
  calibrate(t.db(), "http://c", "old", 1.7, 170, 100);
  EXPECT_LT(calibration_scale(t.db(), "http://c", "old"), 1.7);
  EXPECT_DOUBLE_EQ(calibration_scale(t.db(), "http://d", "old"), 1.7);
}

}  // namespace
}  // namespace autonous::store
