#include "internal/worker/worker.h"

#include <mutex>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "internal/backend/session.h"
#include "internal/common/log.h"
#include "internal/openai/http_transport.h"
#include "internal/worker/reply_webhook.h"
#include "internal/worker/slot.h"

namespace autonous::worker {
namespace {

std::string default_worker_id() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] != '\0' ? host : "worker") + ":" + std::to_string(getpid());
}

// Waits for a stop, then gives in-flight calls the grace period before aborting them.
void wait_for_stop(RunState& state, const std::atomic<int>& running, std::chrono::seconds grace) {
  {
    std::unique_lock lock(state.mu);
    state.cv.wait(lock, state.stop.get_token(), [&] { return running.load() == 0; });
  }
  if (running.load() > 0) {
    if (state.busy.load() > 0)
      log::info("stopping: waiting for in-flight tasks",
                {{"grace_seconds", grace.count()}, {"in_flight", state.busy.load()}});
    state.cv.notify_all();
    std::unique_lock lock(state.mu);
    state.cv.wait_for(lock, grace, [&] { return running.load() == 0 || state.hard_stop.load(); });
  }
  if (running.load() > 0) {
    spdlog::warn("grace period over: aborting in-flight calls and releasing their leases");
    state.hard_stop = true;
  }
}

// TASK_ENDED_NOTIFY, when set, into the database (PostgreSQL's triggers read it); refused now
// (a read-only server): the setting stays as it was, said in the log.
void record_notify_setting(const config::Config& config) {
  if (!config.task_ended_notify) return;
  try {
    backend::open_session(config)->outbox().set_notify(*config.task_ended_notify);
  } catch (const std::exception& e) {
    spdlog::warn("could not record TASK_ENDED_NOTIFY yet ({})", e.what());
  }
}

// Puts back the slots' callback as it was: it points at the webhook only while both live.
struct RestoreOnTrail {
  WorkerDeps& deps;
  std::function<void(const std::vector<events::Event>&)> told;
  ~RestoreOnTrail() { deps.on_trail = told; }
};

void log_stopped(const WorkerStats& s) {
  log::info("worker stopped", {{"claimed", s.claimed.load()},
                               {"completed", s.completed.load()},
                               {"retried", s.retried.load()},
                               {"failed", s.failed.load()},
                               {"released", s.released.load()}});
}

void warn_about_settings(const config::Config& config) {
  if (!config.openai_api_key_header.empty() && config.openai_api_key.empty())
    log::warn("OPENAI_API_KEY_HEADER is set but OPENAI_API_KEY is empty: no key is sent",
              {{"header", config.openai_api_key_header}});
}

}  // namespace

// The deliverer, with its own session, before the slots (they poke it after each commit); it
// turns the webhook on in the database before its first claim and keeps it on. Null without
// REPLY_WEBHOOK_URL.
std::unique_ptr<ReplyWebhook> Worker::start_webhook() {
  if (config_.reply_webhook_url.empty()) return nullptr;
  auto webhook = std::make_unique<ReplyWebhook>(config_, deps_.make_transport());
  webhook->keep_on();
  deps_.on_trail = [told = deps_.on_trail,
                    hook = webhook.get()](const std::vector<events::Event>& trail) {
    hook->poke();
    if (told) told(trail);
  };
  log::info("reply webhook on: every ended task is POSTed",
            {{"max_attempts", config_.reply_webhook_max_attempts},
             {"timeout_ms", config_.reply_webhook_timeout.count()},
             {"signed", !config_.reply_webhook_secret.empty()}});
  return webhook;
}

int64_t WorkerStats::now_ms() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Worker::Worker(config::Config config, WorkerDeps deps, bool drain)
    : config_(std::move(config)),
      deps_(std::move(deps)),
      engine_(engine::engine_settings(config_, *deps_.counter)),
      drain_(drain),
      stats_(config_.worker_concurrency) {
  if (config_.worker_id.empty()) config_.worker_id = default_worker_id();
}

void Worker::run(const std::stop_token& stop, const std::stop_token& hard) {
  RunState state;
  const std::stop_callback forward(stop, [&state] { state.stop.request_stop(); });
  const std::stop_callback cut_short(hard, [&state] {
    {
      const std::lock_guard lock(state.mu);
      state.hard_stop = true;
    }
    state.stop.request_stop();
    state.cv.notify_all();
  });

  record_notify_setting(config_);
  const RestoreOnTrail restore{deps_, deps_.on_trail};
  const std::unique_ptr<ReplyWebhook> webhook = start_webhook();

  // Slots are built here, so a database that cannot be opened fails run() before any thread.
  std::vector<std::unique_ptr<Slot>> slots;
  slots.reserve(static_cast<size_t>(config_.worker_concurrency));
  for (int i = 0; i < config_.worker_concurrency; ++i)
    slots.push_back(
        std::make_unique<Slot>(config_, engine_, deps_, stats_, state, config_.worker_id, i));
  log::info("worker started", {{"worker_id", config_.worker_id},
                               {"concurrency", config_.worker_concurrency},
                               {"drain", drain_}});
  warn_about_settings(config_);

  std::atomic<int> running{config_.worker_concurrency};
  std::mutex failure_mu;
  std::exception_ptr failure;  // the first slot error; run() rethrows it after the others stop
  auto record_failure = [&](std::exception_ptr e) {
    {
      const std::lock_guard lock(failure_mu);
      if (!failure) failure = std::move(e);
    }
    state.stop.request_stop();
  };
  // Where the backend has one (PostgreSQL), listening before the slots' first claim.
  const int n_slots = config_.worker_concurrency;
  const std::unique_ptr<backend::Listener> listener = backend::open_listener(
      config_, [&state, n_slots](int n) { state.wake(n, n_slots); }, n_slots);
  std::vector<std::jthread> threads;
  threads.reserve(slots.size());
  for (auto& slot : slots) {
    threads.emplace_back([&, s = slot.get()] {
      try {
        s->loop(drain_);
      } catch (const std::exception& e) {
        log::error("worker slot stopped by an error; shutting down", {{"error", e.what()}});
        record_failure(std::current_exception());
      } catch (...) {
        spdlog::error("worker slot stopped by an unknown error; shutting down");
        record_failure(std::current_exception());
      }
      {
        // Under the mutex, so run() cannot miss this between its check and its wait.
        const std::lock_guard lock(state.mu);
        --running;
      }
      state.cv.notify_all();
    });
  }

  std::jthread deliverer;
  if (webhook) deliverer = std::jthread([&] { webhook->run(stop, state.hard_stop); });
  wait_for_stop(state, running, config_.shutdown_grace);
  threads.clear();  // joins
  if (webhook) {
    // --drain delivers what is left (waiting out its retries) unless a signal came.
    const bool drain = drain_ && !stop.stop_requested() && !failure;
    if (drain) spdlog::info("drain: delivering the reply webhook's outbox");
    webhook->finish(drain);
    deliverer = {};  // joins
  }
  log_stopped(stats_);
  if (failure) std::rethrow_exception(failure);
}

}  // namespace autonous::worker
