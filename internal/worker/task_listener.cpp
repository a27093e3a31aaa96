#include "internal/worker/task_listener.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "internal/db/pg_connection.h"
#include "internal/queue/pg_queue.h"
#include "internal/worker/slot.h"

namespace autonous::worker {

using std::chrono::milliseconds;

TaskListener::TaskListener(const std::string& url, RunState& run, int slots)
    : c_(db::pg::Connection::open(url)), run_(run), slots_(slots) {
  c_->listen(queue::kTasksChannel);
  thread_ = std::jthread([this](const std::stop_token& stop) { loop(stop); });
}

TaskListener::~TaskListener() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void TaskListener::loop(const std::stop_token& stop) {
  milliseconds backoff{500};
  while (!stop.stop_requested()) {
    try {
      if (c_->broken()) {
        c_->reconnect();
        spdlog::info("task listener reconnected to the database");
        backoff = milliseconds(500);
        run_.wake(slots_, slots_);  // what was notified while it was away
      }
      // Short steps: a stop is seen within 100 ms.
      if (const int n = c_->wait(milliseconds(100)); n > 0) run_.wake(n, slots_);
    } catch (const std::exception& e) {
      spdlog::warn("task listener: {}; reconnecting in {} ms (slots poll meanwhile)", e.what(),
                   backoff.count());
      std::unique_lock lock(run_.mu);
      run_.cv.wait_for(lock, stop, backoff, [] { return false; });
      backoff = std::min(backoff * 2, milliseconds(30000));
    }
  }
}

}  // namespace autonous::worker
