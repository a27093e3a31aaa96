// The slot's lease during a task's HTTP calls (slot.h: keep_going_for).

#include <spdlog/spdlog.h>

#include "internal/common/log.h"
#include "internal/worker/slot.h"
#include "internal/worker/worker.h"

namespace autonous::worker {

using std::chrono::milliseconds;

// Polled during every HTTP call of a task: renews the lease at a third of its length (one
// missed renewal is not fatal), looks every kHeldCheck whether the task is still this claim's
// (`autonous cancel`), and aborts on a hard stop, a cancellation or a lost lease.
std::function<bool()> Slot::keep_going_for(const queue::Task& task) {
  const auto renew_every = std::chrono::duration_cast<milliseconds>(config_.task_lease) / 3;
  lease_lost_ = false;
  return [this, &task, renew_every, last_renew = std::chrono::steady_clock::now(),
          last_look = std::chrono::steady_clock::now()]() mutable {
    beat();
    if (run_.hard_stop.load() || lease_lost_) return false;
    const auto t = std::chrono::steady_clock::now();
    if (t - last_look >= kHeldCheck) {
      // A cancelled task (or a lease taken over) stops its call within about a second. A read;
      // an error here is left to the renewal.
      last_look = t;
      try {
        if (!queue_.still_held(task)) {
          lease_lost_ = true;
          return false;
        }
      } catch (const std::exception&) {
      }
    }
    if (t - last_renew < renew_every) return true;
    last_renew = t;
    bool renewed = false;
    try {
      renewed = queue_.renew_lease(task, now(), config_.task_lease);
    } catch (const std::exception& e) {
      if (!session_->lost()) {
        if (!session_->transient(e)) throw;
        // A read-only or cancelled statement: this renewal is missed (the lease lasts three).
        log::warn("renewing a lease failed for now; the call goes on",
                  {{"slot", index_}, {"task_id", task.id}, {"error", e.what()}});
        return true;
      }
      // One try to connect again; else this renewal is missed (the lease lasts three) and the
      // next one tries again.
      log::warn("the database connection was lost renewing a lease",
                {{"slot", index_}, {"task_id", task.id}, {"error", e.what()}});
      try {
        reconnect_and_report();
        renewed = queue_.renew_lease(task, now(), config_.task_lease);
      } catch (const std::exception& again) {
        log::warn("slot reconnecting failed; the call goes on",
                  {{"slot", index_}, {"error", again.what()}});
        return true;
      }
    }
    if (!renewed) {
      lease_lost_ = true;
      return false;
    }
    return true;
  };
}

}  // namespace autonous::worker
