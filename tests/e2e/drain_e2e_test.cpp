// `autonous worker --drain` with more than one process (label e2e, both backends): a drainer
// with nothing of its own left exits about when the last task running elsewhere ends.

#include <thread>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_support.h"

namespace autonous::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class DrainE2eTest : public E2eTest {};

TEST_F(DrainE2eTest, AnIdleDrainerExitsWhenAnotherProcesssLastTaskEndsNotAPollLater) {
  // Another process's completion wakes no one, so before, the idle drainer saw the queue empty
  // only at its next poll: 30 s here.
  StubServer stub(dir_.path().string(), 1500);
  enqueue("a", "slow");
  const Env e = env(stub, {{"POLL_INTERVAL_MS", "30000"}, {"WORKER_CONCURRENCY", "2"}});
  Process busy({autonous_bin(), "worker", "--drain"}, e, dir_.path().string());
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (num("SELECT count(*) FROM tasks WHERE status = 'running'") < 1 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'running'"), 1);
  Process idle({autonous_bin(), "worker", "--drain"}, e, dir_.path().string());
  const auto b = busy.wait(seconds(20));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->exit_code, 0) << b->err;
  const auto i = idle.wait(seconds(10));
  ASSERT_TRUE(i) << "the idle drainer is still waiting for its poll interval";
  EXPECT_EQ(i->exit_code, 0) << i->err;
  EXPECT_NE(i->err.find("drain: no task queued or running; stopping"), std::string::npos) << i->err;
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 1);
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE role = 'assistant'"), 1);
}

}  // namespace
}  // namespace autonous::testing
