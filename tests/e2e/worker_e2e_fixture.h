#pragma once
// The worker suites' fixture (worker_e2e_test.cpp on both backends, worker_pg_e2e_test.cpp on
// PostgreSQL only): bulk enqueue by plain SQL, ending the workers' sessions, and the
// exactly-once check.

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/e2e_support.h"

namespace autonous::testing {

class WorkerE2eTest : public E2eTest {
 protected:
  // Fast bulk enqueue through plain SQL, as a front end would.
  void enqueue_sql(int chats, int per_chat, const std::string& prefix = "m") {
    autonous(dir_, {"migrate"}, db_env());
    std::vector<std::vector<std::string>> rows;
    for (int k = 0; k < per_chat; ++k)
      for (int c = 0; c < chats; ++c)
        rows.push_back({"chat" + std::to_string(c), prefix + std::to_string(k)});
    insert_many("INSERT INTO tasks(chat_id, text) VALUES ($1, $2)", rows);
  }
  // Waits until `n` tasks are done, at most `timeout`.
  void wait_done(int64_t n, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (num("SELECT count(*) FROM tasks WHERE status = 'done'") < n &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Ends every session the workers hold (a server restart, a failover); returns how many.
  int64_t end_worker_sessions() {
    return num(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
        "current_database() AND pid <> pg_backend_pid() AND application_name = 'autonous'");
  }
  // Every task ends with exactly one user/assistant pair, and done tasks only.
  void expect_exactly_once(int64_t tasks) {
    EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), tasks);
    EXPECT_EQ(num("SELECT count(*) FROM history WHERE role = 'user'"), tasks);
    EXPECT_EQ(num("SELECT count(*) FROM history WHERE role = 'assistant'"), tasks);
    EXPECT_EQ(num("SELECT count(*) FROM (SELECT task_id FROM history GROUP BY task_id "
                  "HAVING count(*) <> 2) AS unpaired"),
              0);
    EXPECT_EQ(num("SELECT count(*) FROM tasks t WHERE reply <> (SELECT text FROM history h "
                  "WHERE h.task_id = t.id AND h.role = 'assistant')"),
              0);
  }
};

}  // namespace autonous::testing
