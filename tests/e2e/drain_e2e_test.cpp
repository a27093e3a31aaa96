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
  // Another process's completion wakes no one: before, the idle drainer saw the queue empty
  // only at its next poll, 30 s here.
  // The call takes 6 s: time for the second drainer to start, also under the sanitizers.
  StubServer stub(dir_.path().string(), 6000);
  enqueue("a", "slow");
  const Env e = env(stub, {{"POLL_INTERVAL_MS", "30000"}, {"WORKER_CONCURRENCY", "2"}});
  Process busy({autonous_bin(), "worker", "--drain"}, e, dir_.path().string());
  const auto running = [this] {
    return num("SELECT count(*) FROM tasks WHERE status = 'running'");
  };
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (running() < 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_EQ(running(), 1);
  Process idle({autonous_bin(), "worker", "--drain"}, e, dir_.path().string());
  // Up, with the task still running elsewhere: it waits for it (it must not exit now).
  deadline = std::chrono::steady_clock::now() + seconds(10);
  while (idle.stderr_text().find("worker started") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_NE(idle.stderr_text().find("worker started"), std::string::npos) << idle.stderr_text();
  ASSERT_FALSE(idle.wait(milliseconds(300))) << idle.stderr_text();
  ASSERT_EQ(running(), 1) << "the task ended before the second drainer was waiting";
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
