#include "internal/worker/worker.h"

#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <SQLiteCpp/Database.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "internal/common/clock.h"
#include "internal/common/utf8.h"
#include "internal/context/assembler.h"
#include "internal/store/calibration_store.h"
#include "internal/tokens/scaled_counter.h"
#include "internal/context/context_builder.h"
#include "internal/context/level_compressor.h"
#include "internal/store/sqlite_provider.h"
#include "internal/store/sqlite_summary_store.h"
#include "internal/db/database.h"
#include "internal/events/event_types.h"
#include "internal/openai/client.h"
#include "internal/openai/errors.h"
#include "internal/openai/http_transport.h"
#include "internal/queue/queue.h"
#include "internal/worker/backoff.h"
#include "internal/worker/engine_config.h"
#include "internal/worker/llm_summarizer.h"

namespace autonous::worker {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string default_worker_id() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] != '\0' ? host : "worker") + ":" + std::to_string(getpid());
}

// Shared by the slots of one run(): the stop signals and the idle wait.
struct RunState {
  std::stop_source stop;               // no more claims (signal, or drain found nothing)
  std::atomic<bool> hard_stop{false};  // grace over: abort in-flight calls
  std::mutex mu;
  std::condition_variable_any cv;
  std::atomic<int> busy{0};  // slots inside a task
};

class Slot {
 public:
  Slot(const config::Config& config, const EngineConfig& engine, const WorkerDeps& deps,
       WorkerStats& stats, RunState& run, const std::string& worker_id)
      : config_(config),
        deps_(deps),
        stats_(stats),
        run_(run),
        worker_id_(worker_id),
        db_(db::open(config.db_path,
                     db::OpenOptions{config.sqlite_synchronous == config::Synchronous::kFull,
                                     config.sqlite_busy_timeout})),
        queue_(*db_),
        provider_(*db_),
        counter_(*deps.counter),
        calibrate_(config.token_calibration && deps.counter->name() == "estimate"),
        compressor_(counter_),
        summaries_(*db_),
        builder_(engine.settings, provider_, compressor_, assembler_, counter_),
        transport_(deps.make_transport()),
        client_(*transport_, openai::ClientOptions{config.openai_base_url, config.openai_api_key,
                                                   config.openai_model, config.llm_timeout}),
        summarizer_(client_, counter_,
                    SummarizerOptions{engine.summary_model, config.summary_max_tokens,
                                      engine.summary_window_budget, config.retry_base}),
        rng_(std::random_device{}()) {
    builder_.enable_summaries(summaries_, &summarizer_);
  }

  void loop(bool drain) {
    const std::stop_token stop = run_.stop.get_token();
    std::optional<queue::Task> task;
    while (!stop.stop_requested()) {
      if (!task) task = queue_.claim(worker_id_, now(), config_.task_lease);
      if (task) {
        ++run_.busy;
        ++stats_.claimed;
        // A successful turn may hand back the next task, claimed in its completion transaction.
        task = process(*task);
        --run_.busy;
        continue;  // the chat's next task may be runnable now: no idle wait
      }
      if (drain && run_.busy.load() == 0 && !queue_.has_pending()) {
        spdlog::info("drain: no task queued or running; stopping");
        run_.stop.request_stop();
        break;
      }
      std::unique_lock lock(run_.mu);
      run_.cv.wait_for(lock, stop, config_.poll_interval, [] { return false; });
    }
    // Stopping with a task claimed but not started: give it back at once.
    if (task && queue_.release(*task, {})) ++stats_.released;
  }

 private:
  common::TimePoint now() const { return deps_.clock->now(); }

  events::Event turn_event(const queue::Task& task, std::string_view type, const json& payload) {
    events::Event e;
    e.type = std::string(type);
    e.task_id = task.id;
    e.chat_id = task.chat_id;
    e.parent_id = task.agent_event_id;
    e.payload = dump(payload);
    e.at_unix_ms = common::to_unix_ms(now());
    return e;
  }

  // Runs one turn of `task`. Returns the next task when the completion transaction claimed one.
  std::optional<queue::Task> process(const queue::Task& task) {
    spdlog::info("task claimed task_id={} chat_id={} attempt={} reclaimed={}", task.id,
                 task.chat_id, task.attempts, task.reclaimed);
    std::vector<events::Event> turn;
    if (task.attempts > config_.task_max_attempts) {
      // Only reachable through expired leases: the worker died or hung on every attempt.
      const std::string error = "gave up after " + std::to_string(task.attempts - 1) +
                                " attempts whose leases expired (worker crashed or hung)";
      turn.push_back(
          turn_event(task, events::kTurnFailed,
                     {{"attempt", task.attempts}, {"reason", "lease_expired"}, {"error", error}}));
      finish_failed(task, error, turn);
      return std::nullopt;
    }
    turn.push_back(turn_event(task, events::kTurnStarted,
                              {{"attempt", task.attempts}, {"reclaimed", task.reclaimed}}));
    const auto call_started = std::chrono::steady_clock::now();
    try {
      if (calibrate_) counter_.set_scale(store::calibration_scale(*db_, client_.model()));
      summarizer_.set_keep_going(keep_going_for(task));
      context::BuiltContext built = builder_.build(task.chat_id, task.text);
      record_context(task, built, false, turn);
      std::optional<openai::ChatResult> answer;
      try {
        answer = call(task, built);
      } catch (const openai::ApiError& e) {
        if (!e.context_overflow()) throw;
        // The provider counts more than we did: recompress at the next level, with the budget
        // cut to the target share, and retry once. A second overflow fails the turn.
        const auto latency = std::chrono::duration_cast<milliseconds>(
            std::chrono::steady_clock::now() - call_started);
        turn.push_back(turn_event(task, events::kLlmRetry,
                                  {{"attempt", task.attempts},
                                   {"reason", e.reason()},
                                   {"status", e.status()},
                                   {"latency_ms", latency.count()},
                                   {"delay_ms", 0},
                                   {"retry_after_ms", nullptr},
                                   {"recompress", true},
                                   {"error", e.what()}}));
        context::BuildOptions harder;
        harder.min_level = next_level(built.level);
        harder.budget_scale = built.policy.thresholds.target;
        built = builder_.build(task.chat_id, task.text, harder);
        record_context(task, built, true, turn);
        answer = call(task, built);
      }
      const openai::ChatResult& result = *answer;
      json usage = nullptr;
      if (result.usage) {
        usage = {{"prompt_tokens", result.usage->prompt_tokens},
                 {"completion_tokens", result.usage->completion_tokens},
                 {"total_tokens", result.usage->total_tokens},
                 {"cached_tokens", result.usage->cached_tokens ? json(*result.usage->cached_tokens)
                                                               : json(nullptr)}};
      }
      json response = {{"status", result.http_status},
                       {"latency_ms", result.latency.count()},
                       {"model", result.model},
                       {"finish_reason", result.finish_reason},
                       {"estimated_tokens", built.estimated_tokens},
                       {"usage", usage}};
      if (result.usage && built.estimated_tokens > 0)
        response["prompt_tokens_per_estimated"] = static_cast<double>(result.usage->prompt_tokens) /
                                                  static_cast<double>(built.estimated_tokens);
      if (calibrate_ && result.usage) {
        const double scale =
            store::raise_calibration(*db_, client_.model(), counter_.scale(),
                                       built.estimated_tokens, result.usage->prompt_tokens);
        response["calibration_scale"] = scale;
      }
      turn.push_back(turn_event(task, events::kLlmResponse, response));
      turn.push_back(turn_event(task, events::kTurnCompleted,
                                {{"attempt", task.attempts},
                                 {"reply_chars", common::count_code_points(result.content)},
                                 {"finish_reason", result.finish_reason}}));
      const std::string user_text = common::sanitize_utf8(task.text);
      if (run_.stop.stop_requested()) {
        if (!queue_.complete(task, user_text, result.content, turn)) {
          spdlog::warn("lease lost before completion; nothing committed task_id={}", task.id);
          return std::nullopt;
        }
        log_done(task, result);
        return std::nullopt;
      }
      auto done = queue_.complete_and_claim(task, user_text, result.content, turn, worker_id_,
                                            now(), config_.task_lease);
      if (!done.completed) {
        spdlog::warn("lease lost before completion; nothing committed task_id={}", task.id);
        return std::nullopt;
      }
      log_done(task, result);
      return std::move(done.next);
    } catch (const openai::Error& e) {
      const auto latency =
          std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - call_started);
      on_llm_error(task, e, latency, turn);
    } catch (const std::exception& e) {
      // A storage or internal error: the task is not at fault, so it is retried like a
      // transient LLM failure. Never a crash.
      spdlog::error("task error task_id={} error={}", task.id, e.what());
      retry_or_fail(task, "internal", e.what(), std::nullopt, json(nullptr), milliseconds(0), turn);
    }
    return std::nullopt;
  }

  static context::Level next_level(context::Level level) {
    using context::Level;
    if (level == Level::kNone) return Level::kNormal;
    if (level == Level::kNormal) return Level::kAggressive;
    return Level::kEmergency;
  }

  // context.compressed (and a context.warning per warning), then llm.request.
  void record_context(const queue::Task& task, const context::BuiltContext& built,
                      bool after_overflow, std::vector<events::Event>& turn) {
    if (built.summarized) {
      const context::SummaryOutcome& s = *built.summarized;
      turn.push_back(turn_event(
          task, events::kContextSummarized,
          {{"summary_id", s.summary_id},
           {"messages_covered", s.messages_covered},
           {"covers_through", s.covers_through},
           {"tokens_before", built.tokens_before},
           {"tokens_after", built.estimated_tokens},
           {"summary_tokens", s.summary_tokens},
           {"calls", s.calls},
           {"latency_ms", s.latency.count()},
           {"model", s.model},
           {"usage", json::parse(s.usage_json, nullptr, false).is_discarded()
                         ? json(nullptr)
                         : json::parse(s.usage_json)}}));
      spdlog::info("context summarized task_id={} chat_id={} messages={} summary_tokens={}",
                   task.id, task.chat_id, s.messages_covered, s.summary_tokens);
    }
    for (const auto& w : built.warnings) {
      const bool summary_failed = w.reason == "summary_failed";
      turn.push_back(turn_event(task,
                                summary_failed ? events::kContextSummaryFailed
                                               : events::kContextWarning,
                                {{"reason", w.reason}, {"message", w.message}}));
      spdlog::warn("context warning task_id={} chat_id={} reason={}", task.id, task.chat_id,
                   w.reason);
    }
    // The figures are already a JSON object: no parse and dump again on the hot path.
    events::Event compressed = turn_event(task, events::kContextCompressed, json::object());
    compressed.payload = context::figures_json(built);
    if (after_overflow) {
      compressed.payload.pop_back();
      compressed.payload += ",\"after_overflow\":true}";
    }
    turn.push_back(std::move(compressed));
    turn.push_back(turn_event(task, events::kLlmRequest,
                              {{"model", client_.model()},
                               {"token_counter", built.counter},
                               {"calibration_scale", counter_.scale()},
                               {"message_count", built.messages.size()},
                               {"estimated_tokens", built.estimated_tokens},
                               {"budget_tokens", built.budget_tokens},
                               {"level", context::to_string(built.level)}}));
  }

  void log_done(const queue::Task& task, const openai::ChatResult& result) {
    ++stats_.completed;
    spdlog::info("task done task_id={} chat_id={} latency_ms={} reply_chars={}", task.id,
                 task.chat_id, result.latency.count(), result.content.size());
  }

  // Polled during every HTTP call of a task: renews the lease at a third of its length (one
  // missed renewal is not fatal) and aborts on a hard stop or a lost lease.
  std::function<bool()> keep_going_for(const queue::Task& task) {
    const auto renew_every = std::chrono::duration_cast<milliseconds>(config_.task_lease) / 3;
    lease_lost_ = false;
    return [this, &task, renew_every, last_renew = std::chrono::steady_clock::now()]() mutable {
      if (run_.hard_stop.load()) return false;
      const auto t = std::chrono::steady_clock::now();
      if (t - last_renew < renew_every) return true;
      last_renew = t;
      if (!queue_.renew_lease(task, now(), config_.task_lease)) {
        lease_lost_ = true;
        return false;
      }
      return true;
    };
  }

  openai::ChatResult call(const queue::Task& task, const context::BuiltContext& built) {
    return client_.chat(built.messages, keep_going_for(task));
  }

  void on_llm_error(const queue::Task& task, const openai::Error& e, milliseconds latency,
                    std::vector<events::Event>& turn) {
    const auto* api = dynamic_cast<const openai::ApiError*>(&e);
    const json status = api != nullptr ? json(api->status()) : json(nullptr);
    const auto* transport = dynamic_cast<const openai::TransportError*>(&e);
    if (transport != nullptr && transport->aborted()) {
      if (lease_lost_) {
        spdlog::warn("lease lost during the call; nothing committed task_id={}", task.id);
        return;
      }
      // Hard stop after the grace period: give the task back untouched.
      turn.push_back(turn_event(task, events::kAgentReleased,
                                {{"reason", "shutdown"}, {"attempt", task.attempts}}));
      if (queue_.release(task, turn)) ++stats_.released;
      spdlog::warn("shutdown: lease released task_id={}", task.id);
      return;
    }
    if (!e.retryable()) {
      turn.push_back(turn_event(task, events::kTurnFailed,
                                {{"attempt", task.attempts},
                                 {"reason", e.reason()},
                                 {"status", status},
                                 {"latency_ms", latency.count()},
                                 {"error", e.what()}}));
      finish_failed(task, e.what(), turn);
      return;
    }
    retry_or_fail(task, e.reason(), e.what(), e.retry_after(), status, latency, turn);
  }

  void retry_or_fail(const queue::Task& task, const std::string& reason, const std::string& error,
                     std::optional<milliseconds> retry_after, const json& status,
                     milliseconds latency, std::vector<events::Event>& turn) {
    if (task.attempts >= config_.task_max_attempts) {
      const std::string final_error =
          error + " (gave up after " + std::to_string(task.attempts) + " attempts)";
      turn.push_back(turn_event(task, events::kTurnFailed,
                                {{"attempt", task.attempts},
                                 {"reason", reason},
                                 {"status", status},
                                 {"latency_ms", latency.count()},
                                 {"error", final_error}}));
      finish_failed(task, final_error, turn);
      return;
    }
    const milliseconds delay =
        backoff_delay(task.attempts, config_.retry_base, config_.retry_max, retry_after, rng_);
    turn.push_back(
        turn_event(task, events::kLlmRetry,
                   {{"attempt", task.attempts},
                    {"reason", reason},
                    {"status", status},
                    {"latency_ms", latency.count()},
                    {"delay_ms", delay.count()},
                    {"retry_after_ms", retry_after ? json(retry_after->count()) : json(nullptr)},
                    {"error", error}}));
    try {
      if (queue_.retry_later(task, now() + delay, error, turn)) {
        ++stats_.retried;
        spdlog::warn("task retry task_id={} attempt={} reason={} delay_ms={}", task.id,
                     task.attempts, reason, delay.count());
      }
    } catch (const std::exception& e) {
      spdlog::error("could not schedule retry task_id={} error={}", task.id, e.what());
    }
  }

  void finish_failed(const queue::Task& task, const std::string& error,
                     const std::vector<events::Event>& turn) {
    try {
      if (queue_.fail(task, error, turn)) {
        ++stats_.failed;
        spdlog::error("task failed task_id={} chat_id={} error={}", task.id, task.chat_id, error);
      }
    } catch (const std::exception& e) {
      spdlog::error("could not record failure task_id={} error={}", task.id, e.what());
    }
  }

  const config::Config& config_;
  const WorkerDeps& deps_;
  WorkerStats& stats_;
  RunState& run_;
  const std::string& worker_id_;
  std::unique_ptr<SQLite::Database> db_;
  queue::Queue queue_;
  store::SQLiteProvider provider_;
  // The configured counter, scaled by the model's calibration when TOKEN_CALIBRATION=on and the
  // counter is the estimator (scale 1 otherwise).
  tokens::ScaledCounter counter_;
  bool calibrate_;
  context::LevelCompressor compressor_;
  context::StandardAssembler assembler_;
  store::SQLiteSummaryStore summaries_;
  context::ContextBuilder builder_;
  std::unique_ptr<openai::HttpTransport> transport_;
  openai::Client client_;
  LlmSummarizer summarizer_;
  std::mt19937_64 rng_;
  bool lease_lost_ = false;
};

}  // namespace

Worker::Worker(config::Config config, WorkerDeps deps, bool drain)
    : config_(std::move(config)),
      deps_(std::move(deps)),
      engine_(engine_config(config_, *deps_.counter)),
      drain_(drain) {
  if (config_.worker_id.empty()) config_.worker_id = default_worker_id();
}

void Worker::run(const std::stop_token& stop) {
  RunState state;
  const std::stop_callback forward(stop, [&state] { state.stop.request_stop(); });

  // Slots are built here, so a database that cannot be opened fails run() before any thread.
  std::vector<std::unique_ptr<Slot>> slots;
  slots.reserve(static_cast<size_t>(config_.worker_concurrency));
  for (int i = 0; i < config_.worker_concurrency; ++i)
    slots.push_back(std::make_unique<Slot>(config_, engine_, deps_, stats_, state, config_.worker_id));
  spdlog::info("worker started worker_id={} concurrency={} drain={}", config_.worker_id,
               config_.worker_concurrency, drain_);

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
  std::vector<std::jthread> threads;
  threads.reserve(slots.size());
  for (auto& slot : slots) {
    threads.emplace_back([&, s = slot.get()] {
      try {
        s->loop(drain_);
      } catch (const std::exception& e) {
        spdlog::error("worker slot stopped by an error; shutting down error={}", e.what());
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

  // Wait for a stop, then give in-flight calls the grace period before aborting them.
  {
    std::unique_lock lock(state.mu);
    state.cv.wait(lock, state.stop.get_token(), [&] { return running.load() == 0; });
  }
  if (running.load() > 0) {
    if (state.busy.load() > 0)
      spdlog::info("stopping: waiting up to {}s for {} in-flight task(s)",
                   config_.shutdown_grace.count(), state.busy.load());
    state.cv.notify_all();
    std::unique_lock lock(state.mu);
    state.cv.wait_for(lock, config_.shutdown_grace, [&] { return running.load() == 0; });
  }
  if (running.load() > 0) {
    spdlog::warn("grace period over: aborting in-flight calls and releasing their leases");
    state.hard_stop = true;
  }
  threads.clear();  // joins
  spdlog::info("worker stopped claimed={} completed={} retried={} failed={} released={}",
               stats_.claimed.load(), stats_.completed.load(), stats_.retried.load(),
               stats_.failed.load(), stats_.released.load());
  if (failure) std::rethrow_exception(failure);
}

}  // namespace autonous::worker
