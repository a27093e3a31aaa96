// `autonous cancel | wait`: a front end's view of one task. `cancel --task ID` withdraws a
// queued or running task; `wait --task ID [--timeout S]` blocks until it ends and prints the
// reply (exit 0), the error (failed: exit 1; cancelled: exit 1), or exits 124 on timeout.

#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cmd/autonous/command_support.h"
#include "cmd/autonous/commands.h"
#include "internal/backend/session.h"
#include "internal/events/event_log.h"
#include "internal/queue/task_queue.h"

namespace autonous::cmd {
namespace {

constexpr int kTimedOut = 124;  // as timeout(1)

struct WaitOptions {
  int64_t task_id = 0;
  std::optional<double> timeout_s;
  bool json = false;
};

int run_cancel(const config::Config& config, int64_t task_id) {
  const auto db = backend::open_session(config, backend::OpenOptions{true, false, true});
  const std::optional<queue::CancelResult> r = db->queue().cancel(task_id);
  if (!r) {
    std::cerr << "autonous: no task " << task_id << "\n";
    return 1;
  }
  if (r->cancelled) {
    std::cout << "cancelled task " << task_id << " (was " << r->was << ")\n";
    return 0;
  }
  if (r->was == "cancelled") {
    std::cout << "task " << task_id << " was already cancelled\n";
    return 0;
  }
  std::cerr << "autonous: task " << task_id << " has already ended (" << r->was
            << "); nothing to cancel\n";
  return 1;
}

void print_json(int64_t task_id, const queue::TaskState& s) {
  nlohmann::ordered_json j;
  j["task_id"] = task_id;
  j["chat_id"] = s.chat_id;
  j["status"] = s.status;
  j["reply"] = s.reply ? nlohmann::ordered_json(*s.reply) : nullptr;
  j["error"] = s.error && s.status == "failed" ? nlohmann::ordered_json(*s.error) : nullptr;
  j["attempts"] = s.attempts;
  j["finished_at"] = s.finished_at.empty() ? nlohmann::ordered_json(nullptr)
                                           : nlohmann::ordered_json(s.finished_at);
  std::cout << events::escape_c1(
                   j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace))
            << "\n";
}

// Prints the ended task's outcome; its exit code.
int report(int64_t task_id, const queue::TaskState& s, bool json) {
  if (json) print_json(task_id, s);
  if (s.status == "done") {
    if (!json) std::cout << s.reply.value_or("") << "\n";
    return 0;
  }
  if (!json) {
    if (s.status == "failed")
      std::cerr << "autonous: task " << task_id << " failed: " << s.error.value_or("") << "\n";
    else
      std::cerr << "autonous: task " << task_id << " was cancelled\n";
  }
  return 1;
}

int run_wait(const config::Config& config, const WaitOptions& o) {
  if (o.timeout_s && (!std::isfinite(*o.timeout_s) || *o.timeout_s < 0))
    throw UsageError("--timeout: seconds, 0 or more");
  if (o.timeout_s && *o.timeout_s > 1e9) throw UsageError("--timeout: at most 1e9 seconds");
  using Clock = std::chrono::steady_clock;
  const bool bounded = o.timeout_s.has_value();
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(
                                           bounded ? std::llround(*o.timeout_s * 1000) : 0));
  // An existing database only: a mistyped DB_PATH is said so (exit 2), not created empty.
  const auto db = backend::open_session(config, backend::OpenOptions{true, true, true});
  // Listening before the first read: an ending between the read and the wait is not missed.
  const std::unique_ptr<backend::EndingWatch> watch = backend::watch_endings(config);
  for (;;) {
    std::optional<queue::TaskState> s;
    try {
      s = db->queue().state(o.task_id);
    } catch (const std::exception& e) {
      // A server restarting, a dropped connection: waited out until the deadline, as the
      // worker does; anything else ends the wait (exit 1).
      if (!db->transient(e)) throw;
      std::cerr << "autonous: the database is unavailable for now (" << e.what()
                << "); waiting on\n";
      if (db->lost()) {
        try {
          db->reconnect();
        } catch (const std::exception&) {
        }
      }
      if (bounded && Clock::now() >= deadline) return kTimedOut;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    if (!s) {
      std::cerr << "autonous: no task " << o.task_id << "\n";
      return 1;
    }
    if (s->status == "done" || s->status == "failed" || s->status == "cancelled")
      return report(o.task_id, *s, o.json);
    std::chrono::milliseconds step(1000);
    if (bounded) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        std::cerr << "autonous: task " << o.task_id << " is still " << s->status
                  << " after the timeout\n";
        return kTimedOut;
      }
      step = std::min(step, left);
    }
    watch->wait(step);
  }
}

}  // namespace

void add_cancel_command(CLI::App& app, Action& action) {
  auto task = std::make_shared<int64_t>(0);
  auto* cancel = app.add_subcommand(
      "cancel", "Cancel a queued or running task: it is never sent, or stops at its next step");
  cancel->add_option("--task", *task, "the task id")->required();
  cancel->callback([&action, task] {
    action = [task](const config::Config& c) { return run_cancel(c, *task); };
  });
}

void add_wait_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<WaitOptions>();
  auto timeout = std::make_shared<double>(0);
  auto* wait = app.add_subcommand(
      "wait",
      "Block until a task ends: print the reply (exit 0), the error (exit 1), 124 on timeout");
  wait->add_option("--task", o->task_id, "the task id")->required();
  auto* timeout_opt =
      wait->add_option("--timeout", *timeout, "give up after S seconds (default: wait on)");
  wait->add_flag("--json", o->json,
                 "print the ended task as one JSON object (task_id, status, reply, error, …)");
  wait->callback([&action, o, timeout, timeout_opt] {
    if (timeout_opt->count() > 0) o->timeout_s = *timeout;
    action = [o](const config::Config& c) { return run_wait(c, *o); };
  });
}

}  // namespace autonous::cmd
