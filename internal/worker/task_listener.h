#pragma once
// TaskListener: on PostgreSQL, one connection per worker process LISTENs on the queue's
// channel (queue::kTasksChannel) and wakes one idle slot per notification (RunState::wake), so
// a task enqueued into an idle deployment starts at once, without every idle slot of every
// process racing to claim it. Started before the slots' first claim (no notification falls
// between a slot's empty claim and its wait). When the connection breaks it reconnects with
// back-off and then wakes every slot (notifications sent meanwhile are lost). The slots' own
// POLL_INTERVAL_MS wait stays the fallback.

#include <memory>
#include <string>
#include <thread>

namespace autonous::db::pg {
class Connection;
}

namespace autonous::worker {

struct RunState;

class TaskListener {
 public:
  // Connects and LISTENs before returning; throws db::pg::PgError when it cannot.
  TaskListener(const std::string& url, RunState& run, int slots);
  ~TaskListener();  // stops and joins the thread
  TaskListener(const TaskListener&) = delete;
  TaskListener& operator=(const TaskListener&) = delete;

 private:
  void loop(const std::stop_token& stop);
  std::unique_ptr<db::pg::Connection> c_;
  RunState& run_;
  const int slots_;
  std::jthread thread_;
};

}  // namespace autonous::worker
