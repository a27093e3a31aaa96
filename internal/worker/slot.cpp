#include "internal/worker/slot.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "internal/common/clock.h"
#include "internal/common/log.h"
#include "internal/common/utf8.h"
#include "internal/engine/engine_storage.h"
#include "internal/events/event_types.h"
#include "internal/openai/errors.h"
#include "internal/openai/http_transport.h"
#include "internal/tools/http_tool.h"
#include "internal/worker/client_options.h"
#include "internal/worker/tool_post.h"
#include "internal/worker/turn_events.h"
#include "internal/worker/worker.h"

namespace autonous::worker {

using std::chrono::milliseconds;
using Kind = TurnOutcome::Kind;

Slot::Slot(const config::Config& config, const engine::EngineSettings& engine,
           const WorkerDeps& deps, WorkerStats& stats, RunState& run, const std::string& worker_id,
           int index)
    : config_(config),
      deps_(deps),
      stats_(stats),
      run_(run),
      worker_id_(worker_id),
      index_(index),
      session_(backend::open_session(config)),
      queue_(session_->queue()),
      counter_(*deps.counter),
      transport_(deps.make_transport()),
      client_(*transport_, chat_client_options(config)),
      summarizer_(
          client_, counter_,
          SummarizerOptions{engine.summary_model, engine.summary_max_tokens, engine.summary_shape,
                            engine.summary_window_budget, config.retry_base}),
      embedding_client_(
          embedding_client_options(config)
              ? std::make_unique<openai::Client>(*transport_, *embedding_client_options(config))
              : nullptr),
      embedder_(
          config.embedding_model.empty()
              ? nullptr
              : std::make_unique<LlmEmbedder>(embedding_client_ ? *embedding_client_ : client_,
                                              config.embedding_model, config.embedding_timeout)),
      engine_(session_->engine_storage(), engine, counter_, &summarizer_, embedder_.get()),
      turn_(TurnParts{
          config, engine_, client_, summarizer_, counter_, config.token_calibration, *deps.clock,
          [this](const std::exception& e) { return session_->transient(e); }, &run.probe,
          deps.toolset.get(), [this](const tools::HttpCall& c) { return post_tool_call(c); },
          [this](int64_t task_id) {
            events::EventFilter f;
            f.task_id = task_id;
            f.type = std::string(events::kLlmRetry);
            return session_->events().query(f);
          },
          deps.counter_for,
          [this](const queue::Task& t, const std::string& text) {
            return queue_.set_partial(t, text);
          }}) {}

tools::HttpAnswer Slot::post_tool_call(const tools::HttpCall& c) {
  // One reply's calls run at once (turn_tools.cpp): the first takes the slot's tool transport
  // (its connections kept between turns), the others a transport of their own.
  std::unique_lock lock(tool_mu_, std::try_to_lock);
  if (lock) {
    if (!tool_transport_) tool_transport_ = deps_.make_transport();
    return post_tool(*tool_transport_, c);
  }
  const std::unique_ptr<openai::HttpTransport> own = deps_.make_transport();
  return post_tool(*own, c);
}

Slot::~Slot() = default;

common::TimePoint Slot::now() const { return deps_.clock->now(); }

void Slot::beat() noexcept {
  if (index_ >= 0 && index_ < stats_.slots) stats_.beats[index_].store(WorkerStats::now_ms());
}

void Slot::committed(const std::vector<events::Event>& trail) noexcept {
  if (!deps_.on_trail) return;
  try {
    deps_.on_trail(trail);
  } catch (const std::exception& e) {
    spdlog::warn("recording a turn's metrics failed: {}", e.what());
  } catch (...) {
    spdlog::warn("recording a turn's metrics failed");
  }
}

void Slot::index_backlog() {
  try {
    if (const int64_t n = engine_.index_backlog(kIdleIndexBudget); n > 0)
      spdlog::debug("indexed {} queued row(s) for search while idle", n);
  } catch (const std::exception& e) {
    spdlog::warn("indexing the search backlog while idle failed: {}", e.what());
  }
}

bool Slot::wait_for_work(const std::stop_token& stop, milliseconds most) {
  std::unique_lock lock(run_.mu);
  if (!run_.cv.wait_for(lock, stop, most, [this] { return run_.wakeups > 0; })) return false;
  --run_.wakeups;
  return true;
}

bool Slot::drained() {
  if (run_.busy.load() != 0 || queue_.has_pending()) return false;
  spdlog::info("drain: no task queued or running; stopping");
  run_.stop.request_stop();
  return true;
}

void Slot::drain_wait(const std::stop_token& stop) {
  const auto until = std::chrono::steady_clock::now() + config_.poll_interval;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<milliseconds>(until - std::chrono::steady_clock::now());
    if (left <= milliseconds(0) || stop.stop_requested()) return;
    if (wait_for_work(stop, std::min(left, kDrainPoll))) return;
    // The last step: the pass that follows looks itself.
    if (left <= kDrainPoll || stop.stop_requested() || drained()) return;
  }
}

void Slot::reconnect_and_report() {
  if (const int64_t id = session_->reconnect(); id > 0) {
    ++stats_.released;
    log::warn("a task claimed as the connection broke is queued again",
              {{"slot", index_}, {"task_id", id}});
  }
}

bool Slot::reconnect(const std::function<bool()>& give_up) {
  if (index_ >= 0 && index_ < stats_.slots) stats_.offline_since[index_] = WorkerStats::now_ms();
  struct Online {  // also when giving up: a stopping slot is no longer counted offline
    WorkerStats& stats;
    int index;
    ~Online() {
      if (index >= 0 && index < stats.slots) stats.offline_since[index] = 0;
    }
  } online{stats_, index_};
  while (!give_up()) {
    for (auto waited = milliseconds(0); waited < backoff_ && !give_up(); waited += kStep) {
      std::this_thread::sleep_for(kStep);
      beat();  // alive, waiting for the database (whose health /healthz reports)
    }
    if (give_up()) break;
    try {
      reconnect_and_report();
      log::info("slot reconnected to the database", {{"slot", index_}});
      backoff_ = milliseconds(500);
      return true;
    } catch (const std::exception& e) {
      backoff_ = std::min(backoff_ * 2, milliseconds(30000));
      log::warn("slot reconnecting failed",
                {{"slot", index_}, {"error", e.what()}, {"retry_in_ms", backoff_.count()}});
    }
  }
  return false;
}

void Slot::set_offline() noexcept {
  if (index_ >= 0 && index_ < stats_.slots && stats_.offline_since[index_].load() == 0)
    stats_.offline_since[index_] = WorkerStats::now_ms();
}

void Slot::set_online() noexcept {
  backoff_ = milliseconds(500);
  if (index_ >= 0 && index_ < stats_.slots) stats_.offline_since[index_] = 0;
}

bool Slot::pause(const std::function<bool()>& give_up) {
  set_offline();
  for (auto waited = milliseconds(0); waited < backoff_ && !give_up(); waited += kStep) {
    std::this_thread::sleep_for(kStep);
    beat();  // alive, waiting for the database (whose health /healthz reports)
  }
  backoff_ = std::min(backoff_ * 2, kRefusalBackoffMax);
  if (give_up()) return false;
  if (backoff_ >= kRefusalReconnect) {
    // Refused for seconds: a new session sees a promoted server (a session keeps the read-only
    // default it started with; with several hosts and target_session_attrs=read-write in
    // DATABASE_URL, libpq picks the writable one). A SQLite file has no session to renew.
    try {
      reconnect_and_report();
    } catch (const std::logic_error&) {
    } catch (const std::exception& e) {
      log::warn("slot connecting again failed", {{"slot", index_}, {"error", e.what()}});
    }
  }
  return true;
}

template <typename Write>
auto Slot::durably(const queue::Task& task, Write&& write) {
  // Until the grace period of a shutdown is over: the turn's result is worth the wait. A
  // database that refuses (rather than one that cannot be reached) is waited for at most a
  // lease: past it, the task is another claim's (a lock never released, a statement that always
  // times out would otherwise hold the slot for good).
  const auto give_up = [this] { return run_.hard_stop.load(); };
  const auto refused_until = std::chrono::steady_clock::now() + config_.task_lease;
  for (;;) {
    try {
      auto result = write();
      set_online();
      return result;
    } catch (const std::exception& e) {
      if (session_->lost()) {
        log::warn("the database connection was lost storing a task's outcome; reconnecting",
                  {{"slot", index_}, {"task_id", task.id}, {"error", e.what()}});
        if (!reconnect(give_up)) throw;
        continue;
      }
      if (!session_->transient(e) || std::chrono::steady_clock::now() >= refused_until) throw;
      log::warn("the database refused storing a task's outcome for now; trying again",
                {{"slot", index_},
                 {"task_id", task.id},
                 {"error", e.what()},
                 {"retry_in_ms", backoff_.count()}});
      if (!pause(give_up)) throw;
    }
  }
}

void Slot::loop(bool drain) {
  const std::stop_token stop = run_.stop.get_token();
  std::optional<queue::Task> task;
  session_->check_still_there();
  while (!stop.stop_requested()) {
    try {
      task = pass(std::move(task), drain, stop);
      if (backoff_ != milliseconds(500)) set_online();
    } catch (const std::exception& e) {
      task.reset();
      if (session_->lost()) {
        // A task claimed in the broken connection's last transaction is not known here:
        // Session::reconnect gives it back (else its lease would expire first).
        log::warn("the database connection was lost; reconnecting",
                  {{"slot", index_}, {"error", e.what()}});
        reconnect([&stop] { return stop.stop_requested(); });
        continue;
      }
      if (!session_->transient(e)) throw;
      // A server that refuses writes for now (a standby, a failover not yet promoted), a
      // cancelled statement, a lock conflict: wait it out, /healthz saying so.
      log::warn("the database refused for now; trying again",
                {{"slot", index_}, {"error", e.what()}, {"retry_in_ms", backoff_.count()}});
      pause([&stop] { return stop.stop_requested(); });
    }
  }
  // Stopping with a task claimed but not started: give it back at once.
  if (task && queue_.release(*task, {})) ++stats_.released;
}

std::optional<queue::Task> Slot::pass(std::optional<queue::Task> task, bool drain,
                                      const std::stop_token& stop) {
  beat();
  session_->check_still_there();
  if (!task) task = queue_.claim(worker_id_, now(), config_.task_lease);
  if (backoff_ != milliseconds(500)) set_online();  // the database answered
  if (task) {
    ++stats_.claimed;
    ++run_.busy;
    ++stats_.busy;
    struct Idle {  // --busy also when process() throws
      std::atomic<int>& busy;
      std::atomic<int>& shown;
      ~Idle() {
        --busy;
        --shown;
      }
    } idle{run_.busy, stats_.busy};
    // A successful turn may hand back the next task, claimed in its completion transaction:
    // the chat's next task may be runnable now, so no idle wait.
    return process(*task);
  }
  if (drain && drained()) return std::nullopt;
  index_backlog();
  if (drain && index_ == 0)
    drain_wait(stop);
  else
    wait_for_work(stop, config_.poll_interval);
  return std::nullopt;
}

std::optional<queue::Task> Slot::process(const queue::Task& task) {
  log::info("task claimed", {{"task_id", task.id},
                             {"chat_id", task.chat_id},
                             {"attempt", task.attempts},
                             {"reclaimed", task.reclaimed}});
  const std::function<bool()> keep_going = keep_going_for(task);
  if (embedder_) embedder_->set_keep_going(keep_going);
  TurnOutcome outcome = turn_.run(task, keep_going, [this] { return lease_lost_; });
  if (embedder_) outcome.embedding_calls = embedder_->take_calls();
  if (outcome.kind == Kind::kRelease && outcome.failure) {
    // The database failed the build: given back uncounted a few times, then counted (a
    // statement that always fails must not cycle for ever).
    db_releases_ = db_released_task_ == task.id ? db_releases_ + 1 : 1;
    db_released_task_ = task.id;
    if (db_releases_ > kDatabaseReleases) {
      turn_.count_database_failure(outcome);
      db_releases_ = 0;
    }
  }
  return apply(task, outcome);
}

// The only place a turn's effects reach the queue: one transaction per outcome.
std::optional<queue::Task> Slot::apply(const queue::Task& task, const TurnOutcome& o) {
  const std::vector<events::Event> trail = turn_events(task, o);
  switch (o.kind) {
    case Kind::kDone:
      try {
        return durably(task, [&] { return complete(task, o, trail); });
      } catch (const std::exception& e) {
        if (session_->transient(e)) {
          // A hard stop, or a lease's length of refusals, ended the wait for the database: the
          // task's lease expires and another claim answers it.
          log::error(
              "the database did not take the reply; the task is answered again once its lease "
              "expires",
              {{"task_id", task.id}, {"error", e.what()}});
          return std::nullopt;
        }
        // The reply arrived but could not be stored: nothing of it is committed, and the event
        // trail says so (no turn.completed); the task is retried like any internal error.
        log::error("could not store the reply", {{"task_id", task.id}, {"error", e.what()}});
        TurnOutcome retry = o;
        turn_.commit_failed(retry, e);
        return apply(task, retry);
      }
    case Kind::kRetryLater:
      try {
        if (durably(task,
                    [&] { return queue_.retry_later(task, now() + o.delay, o.error, trail); })) {
          ++stats_.retried;
          committed(trail);
          log::warn("task retry", {{"task_id", task.id},
                                   {"attempt", task.attempts},
                                   {"reason", o.failure->reason},
                                   {"delay_ms", o.delay.count()}});
        }
      } catch (const std::exception& e) {
        log::error("could not schedule retry", {{"task_id", task.id}, {"error", e.what()}});
      }
      return std::nullopt;
    case Kind::kFailed:
      try {
        if (durably(task, [&] { return queue_.fail(task, o.error, trail); })) {
          ++stats_.failed;
          committed(trail);
          log::error("task failed",
                     {{"task_id", task.id}, {"chat_id", task.chat_id}, {"error", o.error}});
        }
      } catch (const std::exception& e) {
        log::error("could not record failure", {{"task_id", task.id}, {"error", e.what()}});
      }
      return std::nullopt;
    case Kind::kRelease:
      if (durably(task, [&] { return queue_.release(task, trail); })) {
        ++stats_.released;
        committed(trail);
      }
      if (o.failure) {  // the database failed the turn (Turn::run): given back, not counted
        log::warn("database error: lease released",
                  {{"task_id", task.id}, {"error", o.failure->error}});
        pause([this] { return run_.stop.stop_requested(); });  // no claim of it again at once
      } else {
        log::warn("shutdown: lease released", {{"task_id", task.id}});
      }
      return std::nullopt;
    case Kind::kLeaseLost: {
      std::optional<queue::TaskState> now_state;
      try {
        now_state = queue_.state(task.id);
      } catch (const std::exception&) {
      }
      if (now_state && now_state->status == "cancelled")
        log::info("task cancelled while running; its call stopped, nothing committed",
                  {{"task_id", task.id}});
      else
        log::warn("lease lost during the call; nothing committed", {{"task_id", task.id}});
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// Completes a done turn, claiming the chat's next task in the same transaction unless stopping.
std::optional<queue::Task> Slot::complete(const queue::Task& task, const TurnOutcome& o,
                                          const std::vector<events::Event>& trail) {
  const std::string user_text = common::sanitize_utf8(task.text);
  const std::string& reply = o.result->content;
  const bool stopping = run_.stop.stop_requested();
  queue::TurnTokens tokens;  // the rows' counts, stored with them when exact (migration 0018)
  if (!counter_.stored_name().empty()) {
    tokens = {std::string(counter_.stored_name()),
              counter_.count_text(user_text),
              {},
              counter_.count_text(reply)};
    for (const common::Message& m : o.steps) tokens.steps.push_back(counter_.count_text(m.content));
  }
  std::optional<queue::Task> next;
  // One transaction, the slot's: the pair, the task done, the trail, the chat's context state
  // after this turn, and (unless stopping) the chat's next task claimed.
  const bool completed = session_->write_if([&] {
    if (!queue_.complete_within(task, user_text, o.steps, reply, trail, tokens)) return false;
    engine_.write_state(task.chat_id, o.contexts.back().built);
    if (!stopping) next = queue_.claim_within(worker_id_, now(), config_.task_lease);
    return true;
  });
  if (!completed) {
    log::warn(
        "lease lost before completion (taken over, or a try before a lost connection stored "
        "it); nothing committed now",
        {{"task_id", task.id}});
    return std::nullopt;
  }
  ++stats_.completed;
  committed(trail);
  // The chat's next task, if any, was not announced (PostgreSQL does not notify completions:
  // migrations/postgres/0016): when this slot took another chat's task, an idle slot of this
  // process looks (another process's finds it at its next poll).
  // (At most as many wake-ups pending as slots are idle: none when all are busy.)
  if (next && next->chat_id != task.chat_id && queue_.quiet_completions()) {
    const int idle = stats_.slots - run_.busy.load();
    if (idle > 0) run_.wake(1, idle);
  }
  log::info("task done", {{"task_id", task.id},
                          {"chat_id", task.chat_id},
                          {"latency_ms", o.result->latency.count()},
                          {"reply_chars", reply.size()}});
  return next;
}

}  // namespace autonous::worker
