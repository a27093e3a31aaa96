#pragma once
// Slot: one worker thread's loop. It owns a database connection (SQLite or PostgreSQL), an HTTP
// transport, the context engine and a Turn; it claims a task, renews the lease while the turn runs,
// and applies the turn's outcome to the queue in one transaction (complete and claim the chat's
// next task, retry later, fail, or release). Stops claiming when the run's stop fires.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "internal/config/config.h"
#include "internal/db/pg_connection.h"
#include "internal/openai/client.h"
#include "internal/queue/task_queue.h"
#include "internal/store/engine.h"
#include "internal/tokens/scaled_counter.h"
#include "internal/worker/llm_embedder.h"
#include "internal/worker/llm_summarizer.h"
#include "internal/worker/turn.h"

namespace SQLite {
class Database;
}
namespace autonous::openai {
class HttpTransport;
}

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
};

// How long an idle slot indexes the search backlog before it waits for work again.
inline constexpr std::chrono::milliseconds kIdleIndexBudget{50};

class Slot {
 public:
  // Opens the slot's connection. Throws when the database cannot be opened, and
  // config::ConfigError when the engine settings are bad. References must outlive the slot.
  Slot(const config::Config& config, const store::EngineSettings& engine, const WorkerDeps& deps,
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
  // Throws when DB_PATH no longer names the file this slot opened (deleted or replaced): the
  // worker would otherwise write into an unlinked file that nothing reads.
  void check_database_file();
  // Waits up to POLL_INTERVAL_MS for work, or until the run stops: on PostgreSQL a NOTIFY on
  // autonous_tasks (an enqueue, a retry, a chat's next task becoming claimable) ends the wait
  // at once.
  void wait_for_work(const std::stop_token& stop);
  void beat() noexcept;  // WorkerStats::beats
  // Hands a committed trail to WorkerDeps::on_trail.
  void committed(const std::vector<events::Event>& trail) noexcept;

  const config::Config& config_;
  const WorkerDeps& deps_;
  WorkerStats& stats_;
  RunState& run_;
  const std::string& worker_id_;
  const int index_;
  // One of the two: DATABASE_URL's PostgreSQL, or DB_PATH's SQLite file.
  std::unique_ptr<db::pg::Connection> pg_;
  std::unique_ptr<SQLite::Database> db_;
  std::unique_ptr<queue::TaskQueue> queue_owned_;
  queue::TaskQueue& queue_;
  // The configured counter, scaled by the model's calibration when TOKEN_CALIBRATION=on and the
  // counter is the estimator (scale 1 otherwise).
  tokens::ScaledCounter counter_;
  std::unique_ptr<openai::HttpTransport> transport_;
  openai::Client client_;
  LlmSummarizer summarizer_;
  std::unique_ptr<LlmEmbedder> embedder_;  // EMBEDDING_MODEL set
  store::Engine engine_;
  Turn turn_;
  bool lease_lost_ = false;
  uint64_t db_device_ = 0;  // DB_PATH's file as opened
  uint64_t db_inode_ = 0;
  std::chrono::steady_clock::time_point last_file_check_;
};

}  // namespace autonous::worker
