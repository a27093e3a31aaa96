#include "internal/engine/calibration_store.h"

#include <gtest/gtest.h>

#include "internal/backend/sqlite/stores.h"
#include "tests/support/test_db.h"

namespace autonous::store {
namespace {

TEST(CalibrationStoreTest, ScaleStartsAtOneRisesToCoverTheApiAndNeverFalls) {
  testing::TestDb t;
  EXPECT_EQ(calibration_scale(t.db(), "llama3"), 1.0);
  // Estimated 100 at scale 1, the API counted 130: the scale becomes 1.3.
  EXPECT_DOUBLE_EQ(raise_calibration(t.db(), "llama3", 1.0, 100, 130), 1.3);
  // An over-estimate never lowers it.
  EXPECT_DOUBLE_EQ(raise_calibration(t.db(), "llama3", 1.3, 130, 50), 1.3);
  // Estimated 130 at scale 1.3 (so 100 unscaled), the API counted 156: 1.3 * 1.2 = 1.56.
  EXPECT_NEAR(raise_calibration(t.db(), "llama3", 1.3, 130, 156), 1.56, 1e-9);
  // A smaller raise computed elsewhere (a stale scale) does not lower it either.
  EXPECT_NEAR(raise_calibration(t.db(), "llama3", 1.0, 100, 110), 1.56, 1e-9);
  EXPECT_EQ(calibration_scale(t.db(), "other-model"), 1.0);  // per model
  EXPECT_EQ(
      t.db().execAndGet("SELECT raised FROM token_calibration WHERE model = 'llama3'").getInt(), 2);
}

}  // namespace
}  // namespace autonous::store
