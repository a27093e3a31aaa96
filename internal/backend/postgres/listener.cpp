// The Listener on PostgreSQL: one connection per worker process LISTENs on the queue's channel
// (queue::kTasksChannel) and wakes one idle slot per notification, so a task enqueued into an
// idle deployment starts at once, without every idle slot of every process racing to claim it.
// When the connection breaks it reconnects with back-off and then wakes every slot
// (notifications sent meanwhile are lost). The slots' own POLL_INTERVAL_MS wait stays the
// fallback.
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>

#include <spdlog/spdlog.h>

#include "internal/backend/drivers.h"
#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/queue.h"
#include "internal/common/log.h"

namespace autonous::backend {
namespace {

using std::chrono::milliseconds;

class PgListener final : public Listener {
 public:
  // Connects and LISTENs before returning; throws db::pg::PgError when it cannot connect. A
  // server that refuses LISTEN for now (a hot standby, a failover not yet promoted: 25006) is
  // asked again from the loop, with back-off; the slots poll meanwhile.
  PgListener(const std::string& url, Wake wake, int slots)
      : c_(db::pg::Connection::open(url)), wake_(std::move(wake)), slots_(slots) {
    try {
      c_->listen(queue::kTasksChannel);
      listening_ = true;
    } catch (const db::pg::PgError& e) {
      if (!e.transient()) throw;
      spdlog::warn("task listener: {}; listening later (slots poll meanwhile)", e.what());
    }
    thread_ = std::jthread([this](const std::stop_token& stop) { loop(stop); });
  }
  ~PgListener() override {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
  }
  PgListener(const PgListener&) = delete;
  PgListener& operator=(const PgListener&) = delete;

 private:
  void loop(const std::stop_token& stop) {
    milliseconds backoff{500};
    while (!stop.stop_requested()) {
      try {
        if (c_->broken()) {
          c_->reconnect();  // LISTENs again where it listened before
          spdlog::info("task listener reconnected to the database");
          backoff = milliseconds(500);
          wake_(slots_);  // what was notified while it was away
        }
        if (!listening_) {  // refused at start, or by the session a reconnect opened
          c_->listen(queue::kTasksChannel);
          listening_ = true;
          backoff = milliseconds(500);
          wake_(slots_);
        }
        // Short steps: a stop is seen within 100 ms.
        if (const int n = c_->wait(milliseconds(100)); n > 0) wake_(n);
      } catch (const std::exception& e) {
        listening_ = false;  // LISTEN again (it is idempotent) once the server takes it
        log::warn("task listener lost; reconnecting (slots poll meanwhile)",
                  {{"error", e.what()}, {"retry_in_ms", backoff.count()}});
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, stop, backoff, [] { return false; });
        backoff = std::min(backoff * 2, milliseconds(30000));
      }
    }
  }

  std::unique_ptr<db::pg::Connection> c_;
  const Wake wake_;
  const int slots_;
  bool listening_ = false;  // the loop thread's, after the constructor
  std::mutex mu_;           // the back-off wait's, which a stop ends
  std::condition_variable_any cv_;
  std::jthread thread_;  // last: started once the members above exist, joined first
};

// `autonous wait`'s: one connection LISTENing on autonous_task_ended; a broken one polls.
class PgEndingWatch final : public EndingWatch {
 public:
  explicit PgEndingWatch(const std::string& url) : c_(db::pg::Connection::open(url)) {
    c_->listen("autonous_task_ended");
  }
  void wait(milliseconds timeout) override {
    if (!broken_) {
      try {
        c_->wait(timeout);
        return;
      } catch (const std::exception&) {
        broken_ = true;
      }
    }
    std::this_thread::sleep_for(std::min(timeout, milliseconds(500)));
  }

 private:
  std::unique_ptr<db::pg::Connection> c_;
  bool broken_ = false;
};

}  // namespace

std::unique_ptr<EndingWatch> open_pg_ending_watch(const std::string& url) {
  return std::make_unique<PgEndingWatch>(url);
}

std::unique_ptr<Listener> open_pg_listener(const std::string& url, Wake wake, int slots) {
  for (int tries = 1;; ++tries) {  // as open_pg_session: a session ended at once is opened again
    try {
      return std::make_unique<PgListener>(url, wake, slots);
    } catch (const db::pg::PgError& e) {
      if (tries >= 3 || !(e.sqlstate().empty() || e.transient())) throw;
      std::this_thread::sleep_for(milliseconds(250));
    }
  }
}

}  // namespace autonous::backend
