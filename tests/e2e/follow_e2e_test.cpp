// `autonous events --follow` on PostgreSQL end to end: ids are given out before commit, so the
// follower must wait for a gap that may still fill, pass one that never will (a rolled-back
// insert) at once, and not lose an event that was uncommitted when it started.

#include <csignal>
#include <thread>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_support.h"

namespace autonous::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class FollowE2eTest : public E2eTest {
 protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (!pg_) GTEST_SKIP() << "ids given out before commit are PostgreSQL's";
  }
  void mark(int n) {
    exec_sql("INSERT INTO events(type, payload) VALUES ('x.mark', '{\"n\":" + std::to_string(n) +
             "}')");
  }
  // Whether `p` printed `what` within `within`.
  static bool printed(const Process& p, const std::string& what, milliseconds within) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (p.stdout_text().find(what) == std::string::npos &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(20));
    return p.stdout_text().find(what) != std::string::npos;
  }
  static void stop(Process& p) {
    p.signal(SIGTERM);
    ASSERT_TRUE(p.wait(seconds(10)));
  }
};

// A filtered follow waits for a gap like an unfiltered one, instead of skipping an event
// committed after a newer one.
TEST_F(FollowE2eTest, AFilteredFollowWaitsForAnEventCommittedOutOfIdOrder) {
  mark(0);
  Process follow({autonous_bin(), "events", "--type", "x.mark", "--follow"}, db_env(),
                 dir_.path().string());
  ASSERT_TRUE(printed(follow, "\"n\":0", seconds(10))) << follow.stderr_text();
  auto late = pg_->open_connection();
  late->exec("BEGIN");
  late->exec("INSERT INTO events(type, payload) VALUES ('x.mark', '{\"n\":1}')");
  exec_sql("INSERT INTO events(type, payload) VALUES ('other', '{}')");
  mark(2);
  EXPECT_FALSE(printed(follow, "\"n\":2", milliseconds(1000))) << "printed past an uncommitted id";
  late->exec("COMMIT");
  ASSERT_TRUE(printed(follow, "\"n\":2", seconds(10)));
  const std::string out = follow.stdout_text();
  EXPECT_LT(out.find("\"n\":1"), out.find("\"n\":2")) << out;
  EXPECT_EQ(out.find("\"other\""), std::string::npos) << out;
  stop(follow);
}

// Before: the filtered follow read the events that existed at its start through the filter and
// went on after the newest id, so an event uncommitted then (a lower id) was never printed.
TEST_F(FollowE2eTest, AFilteredFollowPrintsAnEventUncommittedWhenItStarted) {
  mark(0);
  auto late = pg_->open_connection();
  late->exec("BEGIN");
  late->exec("INSERT INTO events(type, payload) VALUES ('x.mark', '{\"n\":1}')");
  mark(2);
  Process follow({autonous_bin(), "events", "--type", "x.mark", "--follow"}, db_env(),
                 dir_.path().string());
  ASSERT_TRUE(printed(follow, "\"n\":0", seconds(10))) << follow.stderr_text();
  std::this_thread::sleep_for(milliseconds(1500));  // past the start's wait for settled ids
  late->exec("COMMIT");
  ASSERT_TRUE(printed(follow, "\"n\":2", seconds(10))) << follow.stderr_text();
  ASSERT_TRUE(printed(follow, "\"n\":1", seconds(1))) << follow.stdout_text();
  const std::string out = follow.stdout_text();
  EXPECT_LT(out.find("\"n\":1"), out.find("\"n\":2")) << out;
  stop(follow);
}

// Before: every gap was waited on for 5 s, so a follow over a history with rolled-back inserts
// (a turn whose commit failed leaves one) started 5 s per gap late: 20 s here. Now at once, or
// after one 5 s wait when a transaction elsewhere on the server (a parallel test) stays open.
TEST_F(FollowE2eTest, OldRolledBackGapsArePassedAtOnceFilteredOrNot) {
  auto other = pg_->open_connection();
  for (int n = 0; n < 4; ++n) {
    mark(n);
    other->exec("BEGIN");
    other->exec("INSERT INTO events(type, payload) VALUES ('x.mark', '{\"n\":-1}')");
    other->exec("ROLLBACK");
  }
  mark(4);
  for (const bool filtered : {false, true}) {
    std::vector<std::string> args = {autonous_bin(), "events", "--follow"};
    if (filtered) args.insert(args.end(), {"--type", "x.mark"});
    const auto started = std::chrono::steady_clock::now();
    Process follow(args, db_env(), dir_.path().string());
    ASSERT_TRUE(printed(follow, "\"n\":4", seconds(20))) << follow.stderr_text();
    EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(12)) << "filtered " << filtered;
    EXPECT_EQ(follow.stdout_text().find("\"n\":-1"), std::string::npos);
    stop(follow);
  }
}

// A DBA's pg_terminate_backend (or a server restart) ended the follower's session: it goes on
// after the last event it printed (it used to exit 1, silently for a consumer tailing it).
TEST_F(FollowE2eTest, AFollowOutlivesATerminatedSessionAndMissesNothing) {
  mark(0);
  Process follow({autonous_bin(), "events", "--type", "x.mark", "--follow"}, db_env(),
                 dir_.path().string());
  ASSERT_TRUE(printed(follow, "\"n\":0", seconds(10))) << follow.stderr_text();
  pg_->db().query(
      "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = "
      "current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()");
  mark(1);
  mark(2);
  ASSERT_TRUE(printed(follow, "\"n\":2", seconds(15))) << follow.stderr_text();
  const std::string out = follow.stdout_text();
  EXPECT_EQ(out.find("\"n\":0"), out.rfind("\"n\":0")) << out;  // nothing printed twice
  EXPECT_LT(out.find("\"n\":1"), out.find("\"n\":2")) << out;
  // (The follow's pooled connection ended while idle between two polls: the pool connected
  // afresh before the next one, so the follow itself had nothing to connect again.)
  stop(follow);
}

}  // namespace
}  // namespace autonous::testing
