#pragma once
// Slot: one worker thread's loop. It owns a database session (backend/session.h: it does not know
// which backend), an HTTP transport, the context engine and a Turn; it claims a task, renews the
// lease while the turn runs, and applies the turn's outcome to the queue in one transaction
// (complete and claim the chat's next task, retry later, fail, or release). Stops claiming when the
// run's stop fires.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "internal/backend/session.h"
#include "internal/config/config.h"
#include "internal/engine/engine.h"
#include "internal/openai/client.h"
#include "internal/queue/task_queue.h"
#include "internal/tokens/scaled_counter.h"
#include "internal/worker/llm_embedder.h"
#include "internal/worker/llm_summarizer.h"
#include "internal/worker/turn.h"
#include "internal/worker/window_probe.h"

namespace autonous::openai {
class HttpTransport;
}

namespace autonous::tools {
struct HttpCall;
struct HttpAnswer;
}  // namespace autonous::tools

namespace autonous::worker {

struct WorkerStats;
struct WorkerDeps;

// Shared by the slots of one run: the stop signals and the idle wait.
struct RunState {
  std::stop_source stop;               // no more claims (signal, or drain found nothing)
  std::atomic<bool> hard_stop{false};  // grace over: abort in-flight calls
  std::mutex mu;
  std::condition_variable_any cv;
  std::atomic<int> busy{0};  // slots inside a task
  int wakeups = 0;           // guarded by mu: idle slots asked to claim now (the listener)
  WindowProbe probe;         // sizes a silent window has been seen to take (window_probe.h)

  // Lets `n` idle slots (at most `cap` pending) end their wait and claim.
  void wake(int n, int cap) {
    {
      const std::lock_guard lock(mu);
      wakeups = std::max(wakeups, std::min(wakeups + n, cap));  // a lower cap takes none away
    }
    cv.notify_all();
  }
};

// How long an idle slot indexes the search backlog before it waits for work again.
inline constexpr std::chrono::milliseconds kIdleIndexBudget{50};
// `--drain`: how often the first slot, waiting for work, looks whether anything is still queued
// or running anywhere (one read): another process's completion wakes no one, and a process
// with nothing left of its own would otherwise see the end only at its next POLL_INTERVAL_MS.
inline constexpr std::chrono::milliseconds kDrainPoll{50};
// The step of a reconnect's back-off wait (a stop is seen within it).
inline constexpr std::chrono::milliseconds kStep{100};
// How often a slot in a call looks whether its task is still its own (cancelled, taken over).
inline constexpr std::chrono::milliseconds kHeldCheck{1000};
// A database that refuses for now (Session::transient) is tried again at most this far apart,
// and from kRefusalReconnect on through a new session.
inline constexpr std::chrono::milliseconds kRefusalBackoffMax{5000};
inline constexpr std::chrono::milliseconds kRefusalReconnect{2000};
// A task whose build the database fails is given back uncounted this many times in a row; the
// next failure counts as an attempt (TASK_MAX_ATTEMPTS ends a statement that always fails).
inline constexpr int kDatabaseReleases = 3;

class Slot {
 public:
  // Opens the slot's connection. Throws when the database cannot be opened, and
  // config::ConfigError when the engine settings are bad. References must outlive the slot.
  Slot(const config::Config& config, const engine::EngineSettings& engine, const WorkerDeps& deps,
       WorkerStats& stats, RunState& run, const std::string& worker_id, int index = 0);
  ~Slot();

  // Claims and runs tasks until the run's stop fires (or, with drain, nothing is left).
  void loop(bool drain);

 private:
  std::optional<queue::Task> process(const queue::Task& task);
  std::optional<queue::Task> apply(const queue::Task& task, const TurnOutcome& outcome);
  std::optional<queue::Task> complete(const queue::Task& task, const TurnOutcome& outcome,
                                      const std::vector<events::Event>& trail);
  std::function<bool()> keep_going_for(const queue::Task& task);
  common::TimePoint now() const;
  // An idle moment: indexes queued search rows (a front end's import) for kIdleIndexBudget.
  void index_backlog();
  tools::HttpAnswer post_tool_call(const tools::HttpCall& call);
  // Waits up to `most` (POLL_INTERVAL_MS) for work, or until the run stops, or until the
  // backend's listener (where it has one) wakes it: a task became claimable (true).
  bool wait_for_work(const std::stop_token& stop, std::chrono::milliseconds most);
  // `--drain`: true, and the run stopped, when no slot of this process runs a task and nothing
  // is queued or running anywhere (Queue::has_pending).
  bool drained();
  // `--drain`: wait_for_work for POLL_INTERVAL_MS, but checking drained() every kDrainPoll.
  void drain_wait(const std::stop_token& stop);
  // Runs one pass of loop(); a lost connection (Session::lost) is connected again and a
  // database error that passes (Session::transient) waited out, both with back-off, instead of
  // stopping the worker. Returns the task to run next.
  std::optional<queue::Task> pass(std::optional<queue::Task> task, bool drain,
                                  const std::stop_token& stop);
  // The session's connection is lost: reconnects, waiting `backoff_` before each try (doubling
  // it up to 30 s), until it succeeds (true) or `give_up` says so (false).
  bool reconnect(const std::function<bool()>& give_up);
  // Session::reconnect, and a word about a task it gave back.
  void reconnect_and_report();
  // Runs `write` (a queue write of the turn's outcome) until it succeeds or a hard stop: when the
  // session's connection was lost under it, connects again; when the database refused it for
  // now (Session::transient: read-only, a cancelled statement), waits with back-off. The lease
  // token, not the session, fences the write: one the server did commit before the connection
  // broke is refused the second time (nothing is stored twice).
  template <typename Write>
  auto durably(const queue::Task& task, Write&& write);
  // Waits `backoff_` (doubling it up to kRefusalBackoffMax), the slot counted offline for
  // /healthz, then, after refusals of a few seconds, connects again; false when `give_up` said
  // so first.
  bool pause(const std::function<bool()>& give_up);
  void set_offline() noexcept;  // WorkerStats::offline_since, from the first refusal on
  void set_online() noexcept;   // the database answers again: back-off and offline reset
  void beat() noexcept;         // WorkerStats::beats
  // Hands a committed trail to WorkerDeps::on_trail.
  void committed(const std::vector<events::Event>& trail) noexcept;

  const config::Config& config_;
  const WorkerDeps& deps_;
  WorkerStats& stats_;
  RunState& run_;
  const std::string& worker_id_;
  const int index_;
  std::unique_ptr<backend::Session> session_;
  queue::TaskQueue& queue_;  // the session's
  // The configured counter, scaled by the model's calibration when TOKEN_CALIBRATION=on and the
  // counter is the estimator (scale 1 otherwise).
  tokens::ScaledCounter counter_;
  std::unique_ptr<openai::HttpTransport> transport_;
  // HTTP tools' calls: the slot's own transport for one call at a time (tool_mu_), a new one for
  // each call that runs beside it.
  std::mutex tool_mu_;
  std::unique_ptr<openai::HttpTransport> tool_transport_;
  openai::Client client_;
  LlmSummarizer summarizer_;
  std::unique_ptr<openai::Client> embedding_client_;  // EMBEDDING_BASE_URL set
  std::unique_ptr<LlmEmbedder> embedder_;             // EMBEDDING_MODEL set
  engine::Engine engine_;
  Turn turn_;
  bool lease_lost_ = false;
  // The same task given back for a database error this many times in a row (process()).
  int64_t db_released_task_ = 0;
  int db_releases_ = 0;
  std::chrono::milliseconds backoff_{500};  // before the next reconnect
};

}  // namespace autonous::worker
