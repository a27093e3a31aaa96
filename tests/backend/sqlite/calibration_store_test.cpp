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

TEST(CalibrationRuleTest, TheAddedPartMovesHalfWayAndIgnoresNoise) {
  using engine::added_next;
  EXPECT_EQ(added_next(0, std::nullopt), 0);  // nothing implied: stays
  // Half the way; a first part that half the way would leave under kAddedMin is taken whole.
  EXPECT_EQ(added_next(0, 1000), 500);
  EXPECT_EQ(added_next(500, 1000), 750);
  EXPECT_EQ(added_next(0, 100), 100);
  EXPECT_EQ(added_next(1000, 400), 700);
  // Under kAddedMin is none: a small or negative implication brings a part down, a small part
  // to none.
  EXPECT_EQ(added_next(0, 40), 0);
  EXPECT_EQ(added_next(0, -300), 0);
  EXPECT_EQ(added_next(90, -300), 0);
  EXPECT_EQ(added_next(1000, -300), 500);
  // Moves under kAddedStep are not made; an implausible part (past kAddedMax) is ignored.
  EXPECT_EQ(added_next(1000, 1020), 1000);
  EXPECT_EQ(added_next(1000, engine::kAddedMax + 1), 1000);
  // A stored part outside [0, kAddedMax] (written by hand) applies as none.
  EXPECT_EQ(engine::added_applied(-5), 0);
  EXPECT_EQ(engine::added_applied(1LL << 40), 0);
  EXPECT_EQ(added_next(1LL << 40, 500), 250);
  // Judged again and again, it lands on the part.
  int64_t a = 0;
  for (int i = 0; i < 8; ++i) a = added_next(a, 1000);
  EXPECT_NEAR(static_cast<double>(a), 1000.0, 20.0);
}

TEST(CalibrationRuleTest, WhatIsStoredAfterALesson) {
  using engine::calibration_after;
  // Nothing moves: nothing stored.
  EXPECT_FALSE(calibration_after({{1.05, 0, 0}, 105, 100, 0, 0}));
  EXPECT_FALSE(calibration_after({{1.05, 500, 900}, 105, 100, 500, 900}));
  EXPECT_FALSE(calibration_after({{1.05, 500, 900}, 105, 100, 500, 400}));  // saw less
  // The scale moves; the added part and the proven size come along, each marked as moved.
  const auto a = calibration_after({{1.0, 0, 0}, 100, 130, 300, 2000});
  ASSERT_TRUE(a);
  EXPECT_NEAR(a->to.scale, 1.365, 1e-9);
  EXPECT_EQ(a->to.added, 300);
  EXPECT_EQ(a->to.proven, 2000);
  EXPECT_TRUE(a->scale && a->added && a->proven);
  // The scale stays (no lesson for it): the proven size alone is marked.
  const auto b = calibration_after({{0.43, 0, 2000}, 0, 0, 0, 2600});
  ASSERT_TRUE(b);
  EXPECT_DOUBLE_EQ(b->to.scale, 0.43);
  EXPECT_EQ(b->to.proven, 2600);
  EXPECT_FALSE(b->scale);
  EXPECT_FALSE(b->added);
  EXPECT_TRUE(b->proven);
  // The added part alone.
  const auto c = calibration_after({{0.43, 100, 2000}, 0, 0, 0, 0});
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->added && !c->scale && !c->proven);
  EXPECT_EQ(c->to.added, 0);
}

TEST(CalibrationStoreTest, ScaleIsKeptPerEndpointAndModelAndMovesBothWays) {
  testing::TestDb t;
  const auto scale = [&t](const std::string& e, const std::string& m) {
    return calibration(t.db(), e, m).scale;
  };
  EXPECT_EQ(scale("http://a", "m"), 1.0);
  EXPECT_NEAR(calibrate(t.db(), "http://a", "m", {{1.0, 0}, 100, 130, 0}).scale, 1.365, 1e-9);
  EXPECT_NEAR(scale("http://a", "m"), 1.365, 1e-9);
  // Another endpoint, another model: their own.
  EXPECT_EQ(scale("http://b", "m"), 1.0);
  EXPECT_EQ(scale("http://a", "other"), 1.0);
  // Down part of the way.
  // (A lowering applies from the scale stored, as read.)
  const double lowered =
      calibrate(t.db(), "http://a", "m", {{scale("http://a", "m"), 0}, 136, 60, 0}).scale;
  EXPECT_LT(lowered, 1.0);
  EXPECT_NEAR(scale("http://a", "m"), lowered, 1e-9);
  EXPECT_EQ(t.db()
                .execAndGet("SELECT raised || '/' || lowered FROM token_calibration WHERE "
                            "endpoint = 'http://a' AND model = 'm'")
                .getString(),
            "1/1");
  // A row from before migration 0012 (endpoint '') applies until the endpoint has its own.
  t.db().exec("INSERT INTO token_calibration(endpoint, model, scale) VALUES ('', 'old', 1.7)");
  EXPECT_DOUBLE_EQ(scale("http://c", "old"), 1.7);
  calibrate(t.db(), "http://c", "old", {{1.7, 0}, 170, 100, 0});
  EXPECT_LT(scale("http://c", "old"), 1.7);
  EXPECT_DOUBLE_EQ(scale("http://d", "old"), 1.7);
}

TEST(CalibrationStoreTest, TheAddedPartIsStoredWithTheScaleAndAloneWhenTheScaleStays) {
  testing::TestDb t;
  // On its aim (no scale move) but a new added part: written, with the scale used.
  const engine::Calibration a = calibrate(t.db(), "http://a", "m", {{1.05, 0}, 105, 100, 900});
  EXPECT_DOUBLE_EQ(a.scale, 1.05);
  EXPECT_EQ(a.added, 900);
  EXPECT_EQ(calibration(t.db(), "http://a", "m").added, 900);
  // Nothing moves: nothing written, the stored row returned.
  const engine::Calibration b = calibrate(t.db(), "http://a", "m", {{1.05, 900}, 105, 100, 900});
  EXPECT_EQ(b.added, 900);
  EXPECT_DOUBLE_EQ(b.scale, 1.05);
  // A hand-written part out of range applies as none; the column refuses a negative one.
  t.db().exec("UPDATE token_calibration SET added_tokens = 1000000000");
  EXPECT_EQ(calibration(t.db(), "http://a", "m").added, 0);
  EXPECT_THROW(t.db().exec("UPDATE token_calibration SET added_tokens = -1"), std::exception);
  t.db().exec("UPDATE token_calibration SET proven_raw = 1000000000000");
  EXPECT_EQ(calibration(t.db(), "http://a", "m").proven, 0);
  EXPECT_THROW(t.db().exec("UPDATE token_calibration SET proven_raw = -1"), std::exception);
}

}  // namespace
}  // namespace autonous::store
