#include "cmd/autonous/commands.h"

#include "cmd/autonous/command_support.h"

#include <csignal>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stop_token>
#include <thread>

#include <SQLiteCpp/Database.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "internal/common/text.h"
#include "internal/common/clock.h"
#include "internal/common/utf8.h"
#include "internal/context/assembler.h"
#include "internal/context/context_builder.h"
#include "internal/tokens/counter_factory.h"
#include "internal/events/event_stats.h"
#include "internal/context/level_compressor.h"
#include "internal/store/sqlite_provider.h"
#include "internal/store/sqlite_summary_store.h"
#include "internal/tokens/token_counter.h"
#include "internal/db/database.h"
#include "internal/db/migrator.h"
#include "internal/events/event_log.h"
#include "internal/openai/curl_transport.h"
#include "internal/queue/queue.h"
#include "internal/worker/worker.h"

namespace autonous::cmd {

int run_migrate(const config::Config& config) {
  auto db = open_db(config);
  std::cout << "schema version " << db::schema_version(*db) << "\n";
  return 0;
}

int run_enqueue(const config::Config& config, const EnqueueOptions& options) {
  if (common::trim(options.chat_id).empty()) throw UsageError("--chat: must not be empty");
  std::string text;
  if (options.text) {
    text = *options.text;
  } else {
    text = read_all(std::cin);
  }
  if (common::trim(text).empty()) throw UsageError("TEXT: empty message (give TEXT or pipe it on stdin)");
  auto db = open_db(config);
  queue::Queue q(*db);
  std::cout << q.enqueue(options.chat_id, text, options.priority) << "\n";
  return 0;
}

int run_status(const config::Config& config, bool json) {
  auto db = open_db(config);
  queue::Queue q(*db);
  const queue::QueueStats s = q.stats(common::SystemClock().now());
  if (json) {
    nlohmann::ordered_json j;
    j["queued"] = s.queued;
    j["running"] = s.running;
    j["done"] = s.done;
    j["failed"] = s.failed;
    j["oldest_queued_age_seconds"] = s.oldest_queued_age_seconds
                                         ? nlohmann::ordered_json(*s.oldest_queued_age_seconds)
                                         : nullptr;
    auto failures = nlohmann::ordered_json::array();
    for (const auto& f : s.recent_failures)
      failures.push_back({{"task_id", f.task_id},
                          {"chat_id", f.chat_id},
                          {"error", f.error},
                          {"finished_at", f.finished_at}});
    j["recent_failures"] = failures;
    std::cout << j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::cout << "queued   " << s.queued << "\nrunning  " << s.running << "\ndone     " << s.done
            << "\nfailed   " << s.failed << "\n";
  if (s.oldest_queued_age_seconds)
    std::cout << "oldest queued task waiting "
              << fmt::format("{:.1f}", *s.oldest_queued_age_seconds) << " s\n";
  if (!s.recent_failures.empty()) {
    std::cout << "recent failures:\n";
    for (const auto& f : s.recent_failures)
      std::cout << "  task " << f.task_id << " chat " << f.chat_id << " at " << f.finished_at
                << ": " << f.error << "\n";
  }
  return 0;
}

int run_events(const config::Config& config, const EventsOptions& options) {
  auto db = open_db(config);
  events::EventFilter filter;
  filter.task_id = options.task_id;
  filter.type = options.type;
  for (;;) {
    const auto batch = events::query(*db, filter);
    for (const auto& e : batch) {
      std::cout << events::to_json_line(e) << "\n";
      filter.after_id = e.id;
    }
    std::cout.flush();
    if (batch.size() == static_cast<size_t>(filter.limit)) continue;
    if (!options.follow) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int run_context(const config::Config& config, const ContextOptions& options) {
  if (common::trim(options.chat_id).empty()) throw UsageError("--chat: must not be empty");
  const worker::EngineConfig settings = engine(config);
  auto db = open_db(config);
  store::SQLiteProvider provider(*db);
  const context::LevelCompressor compressor(token_counter(config));
  const context::StandardAssembler assembler;
  store::SQLiteSummaryStore summaries(*db);
  context::ContextBuilder builder(settings.settings, provider, compressor, assembler,
                                  token_counter(config));
  builder.enable_summaries(summaries, nullptr);  // shows the summary in use; calls nothing
  std::cout << context::dry_run_json(builder.build(options.chat_id, options.text)) << "\n";
  return 0;
}

int run_context_stats(const config::Config& config, const ContextStatsOptions& options) {
  auto db = open_db(config);
  const events::StatsFilter filter{options.chat_id, options.since};
  std::cout << events::context_stats_json(events::compression_stats(*db, filter),
                                           events::estimate_stats(*db, filter))
            << "\n";
  return 0;
}

int run_requeue(const config::Config& config, const RequeueOptions& options) {
  if (options.task_id.has_value() == options.failed)
    throw UsageError("requeue: give exactly one of --task ID or --failed");
  auto db = open_db(config);
  queue::Queue q(*db);
  if (options.failed) {
    std::cout << "requeued " << q.requeue_failed() << " task(s)\n";
    return 0;
  }
  if (!q.requeue(*options.task_id)) {
    std::cerr << "autonous: task " << *options.task_id << " is not failed (or does not exist)\n";
    return 1;
  }
  std::cout << "requeued task " << *options.task_id << "\n";
  return 0;
}

int run_tokens(const config::Config& config, const TokensOptions& options) {
  std::string text;
  if (options.file == "-") {
    text = read_all(std::cin);
  } else {
    std::ifstream in(options.file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + options.file);
    text = read_all(in);
  }
  const auto counter = make_counter(config, options.encoding.value_or(config.token_counter));
  nlohmann::ordered_json j;
  j["encoding"] = std::string(counter->name());
  // Text only, no chat framing: what tiktoken's encode_ordinary returns. Invalid UTF-8 counts
  // as U+FFFD, one per maximal invalid sequence.
  j["tokens"] = counter->count_text(common::sanitize_utf8(text));
  j["bytes"] = text.size();
  std::cout << j.dump() << "\n";
  return 0;
}

int run_worker(const config::Config& config, bool drain) {
  config::require_llm_endpoint(config);
  const worker::EngineConfig settings = engine(config);
  spdlog::info("context budget tokens={} source=\"{}\" strategy={}", settings.budget.tokens,
               settings.budget.source, context::to_string(settings.settings.policy.strategy));
  open_db(config);  // migrate once, before the slots open their own connections

  // SIGTERM/SIGINT are taken by one thread with sigwait; every other thread blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGUSR1);  // only wakes the signal thread when the worker is done
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const openai::CurlGlobal curl;
  const common::SystemClock clock;
  worker::WorkerDeps deps;
  deps.make_transport = [] { return std::make_unique<openai::CurlTransport>(); };
  deps.counter = &token_counter(config);
  deps.clock = &clock;
  worker::Worker w(config, deps, drain);

  std::stop_source stop;
  std::jthread signal_thread([&stop, signals](const std::stop_token& done) {
    const timespec tick{0, 200'000'000};
    while (!done.stop_requested()) {
      const int sig = sigtimedwait(&signals, nullptr, &tick);
      if (sig == SIGTERM || sig == SIGINT) {
        spdlog::info("signal received signal={}; stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        stop.request_stop();
      }
    }
  });
  w.run(stop.get_token());
  // Wake the signal thread now rather than at its next tick: `--drain` exits at once.
  signal_thread.request_stop();
  pthread_kill(signal_thread.native_handle(), SIGUSR1);
  return 0;
}

}  // namespace autonous::cmd
