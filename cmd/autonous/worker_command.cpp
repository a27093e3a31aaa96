// `autonous worker [--drain]`: runs the daemon. SIGTERM/SIGINT stop it gracefully; --drain
// exits 0 once no task is queued or running.

#include <atomic>
#include <csignal>
#include <ctime>
#include <memory>
#include <stop_token>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cmd/autonous/command_support.h"
#include "cmd/autonous/commands.h"
#include "cmd/autonous/service_notify.h"
#include "cmd/autonous/version.h"
#include "internal/backend/session.h"
#include "internal/common/clock.h"
#include "internal/common/log.h"
#include "internal/config/pool_default.h"
#include "internal/engine/engine.h"
#include "internal/engine/model_presets.h"
#include "internal/openai/curl_transport.h"
#include "internal/ops/health.h"
#include "internal/tokens/counter_factory.h"
#include "internal/tokens/hf_counter.h"
#include "internal/tools/mcp_client.h"
#include "internal/tools/mcp_http.h"
#include "internal/tools/mcp_stdio.h"
#include "internal/tools/toolset.h"
#include "internal/worker/tool_post.h"
#include "internal/worker/worker.h"

namespace autonous::cmd {
namespace {

// SIGTERM/SIGINT are taken by one thread with sigwait; every other thread blocks them. SIGUSR1
// only wakes that thread when the worker is done.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGUSR1);
  sigaddset(&signals, SIGHUP);  // never fatal (#33): logged and ignored
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// SIGHUP is never fatal, from the worker's start: held until the signal thread logs it.
void hold_sighup() {
  sigset_t hup;
  sigemptyset(&hup);
  sigaddset(&hup, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &hup, nullptr);
}

// What /healthz and /metrics see of the slots.
ops::LoopStatus loop_status(const worker::Worker& w) {
  const worker::WorkerStats& s = w.stats();
  ops::LoopStatus out;
  out.slots = s.slots;
  out.busy = s.busy.load();
  const int64_t now = worker::WorkerStats::now_ms();
  for (int i = 0; i < s.slots; ++i) {
    const int64_t beat = s.beats[i].load();
    out.beat_age_ms.push_back(beat == 0 ? -1 : now - beat);
    const int64_t offline = s.offline_since[i].load();
    out.offline_ms.push_back(offline == 0 ? 0 : now - offline);
  }
  return out;
}

// Indexes what is queued for recall's search (a whole history after an upgrade, an import made
// while no worker ran) before the slots serve; closes the start-up connection.
// A database that refuses writes for now (a standby, a failover not yet promoted) does not stop
// the start: the slots wait it out and index the backlog while idle.
void catch_up_search(std::unique_ptr<backend::Session> db) {
  const auto started = std::chrono::steady_clock::now();
  int64_t n = 0;
  try {
    n = db->index_search();
  } catch (const std::exception& e) {
    if (!db->transient(e)) throw;
    spdlog::warn(
        "search index catch-up skipped: the database refused for now ({}); the slots "
        "wait for it and index while idle",
        e.what());
    return;
  }
  if (n > 0)
    log::info("search index caught up",
              {{"rows", n},
               {"ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - started)
                          .count()}});
}

// An estimated model whose window is unknown is calibrated both ways, but its prompts grow past
// the largest the server has taken whole only a step at a time (worker/window_probe.h): a server
// may cut prompts silently. Said once at start, with the remedy.
void warn_if_window_unknown(const config::Config& config) {
  const std::string& model = config.openai_model;
  const std::optional<engine::ModelPreset> preset = engine::find_preset(model);
  const bool estimated =
      config.token_counter == "estimate" ||
      (config.token_counter == "auto" && !tokens::encoding_for_model(model) &&
       tokens::hf_family_for_model(model) == nullptr && (!preset || preset->tokenizer.empty()));
  if (!estimated || !config.token_calibration || config.context_window ||
      (preset && preset->window > 0))
    return;
  spdlog::warn(
      "model {:?} has no known window: its prompts grow past the largest the server has "
      "counted whole by at most a quarter at a time, and a count that stops growing with the "
      "prompt is learned as a silent window (Ollama's num_ctx); set CONTEXT_WINDOW to the "
      "server's window to use the whole budget at once",
      model);
}

// The declared tools (TOOLS_FILE), checked whole before anything starts: a bad file is a
// configuration error (exit 2) naming its entry and field.
std::shared_ptr<const tools::Toolset> load_toolset(const config::Config& config) {
  if (config.tools_file.empty()) return nullptr;
  tools::ToolsFile file;
  try {
    file = tools::load_tools_file(config.tools_file);
  } catch (const tools::ToolsFileError& e) {
    throw config::ConfigError("TOOLS_FILE", e.what());
  }
  // Each MCP server is started (stdio) and asked for its tools; one that fails is left out with
  // a warning naming it and why: the worker runs with the other tools.
  std::vector<std::shared_ptr<tools::McpClient>> mcp;
  for (const tools::McpServer& m : file.mcp_servers) {
    try {
      std::unique_ptr<tools::McpChannel> channel;
      if (m.stdio()) {
        channel = std::make_unique<tools::McpStdio>(m.name, m.command, m.env);
      } else {
        // Its own curl transport: the client's mutex keeps it to one request at a time.
        auto transport = std::make_shared<openai::CurlTransport>();
        channel = std::make_unique<tools::McpHttp>(
            m.name, m.url, m.headers,
            [transport](const tools::HttpCall& c) { return worker::post_tool(*transport, c); });
      }
      auto client = std::make_shared<tools::McpClient>(m.name, std::move(channel));
      client->start();
      log::info(fmt::format("MCP server {:?} started", m.name),
                {{"tools", client->tools().size()}});
      mcp.push_back(std::move(client));
    } catch (const tools::McpError& e) {
      spdlog::warn("TOOLS_FILE: MCP server {:?} left out: {}", m.name, e.what());
    } catch (const nlohmann::json::exception& e) {
      spdlog::warn("TOOLS_FILE: MCP server {:?} left out: a malformed answer ({})", m.name,
                   e.what());
    }
  }
  auto toolset = std::make_shared<const tools::Toolset>(
      std::move(file.tools), std::move(mcp),
      [](const std::string& why) { spdlog::warn("TOOLS_FILE: {}", why); });
  log::info("tools offered", {{"count", toolset->names().size()},
                              {"names", fmt::format("{}", fmt::join(toolset->names(), ","))},
                              {"max_steps", config.tool_max_steps}});
  return toolset;
}

// The thread that takes SIGTERM/SIGINT (a first one stops the worker, a second cuts the grace
// period short) and SIGHUP (logged, ignored) until `done`.
std::jthread start_signal_thread(const sigset_t& signals, std::stop_source& stop,
                                 std::stop_source& hard, const ServiceNotify& systemd) {
  return std::jthread([&stop, &hard, &systemd, signals](const std::stop_token& done) {
    const timespec tick{0, 200'000'000};
    while (!done.stop_requested()) {
      const int sig = sigtimedwait(&signals, nullptr, &tick);
      if (sig == SIGHUP) {
        // Logs go to stderr (the journal, or the service manager's file): nothing to reopen,
        // and the configuration is read at start only.
        log::info("SIGHUP ignored (restart the worker to read new settings)",
                  {{"signal", "SIGHUP"}});
        continue;
      }
      if (sig != SIGTERM && sig != SIGINT) continue;
      const char* name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
      if (!stop.stop_requested()) {
        log::info("signal received; stopping (again: at once)", {{"signal", name}});
        systemd.stopping();
        stop.request_stop();
      } else {
        log::warn("second signal received; aborting in-flight calls now", {{"signal", name}});
        hard.request_stop();
      }
    }
  });
}

// What systemd's watchdog asks (service_notify.h): every slot beat within the stall limit; fine
// while the worker is not built yet (migrating, catching up). The limit is longer than /healthz's
// and than any wait a slot makes without beating (a statement blocked by a network partition
// until TCP gives up, about a minute; a lease renewal's few statements, each within SQLite's
// busy timeout): a kill and restart is for a slot
// wedged for good, not one waiting out its database.
std::function<bool(std::string&)> watchdog_check(const config::Config& config,
                                                 const std::atomic<const worker::Worker*>& live) {
  ops::HealthOptions options;
  options.need_write = false;
  options.stall_limit = std::max({std::chrono::milliseconds(std::chrono::seconds(120)),
                                  std::chrono::milliseconds(3 * config.poll_interval),
                                  3 * config.sqlite_busy_timeout + std::chrono::seconds(60)});
  options.offline_limit = std::chrono::hours(24 * 365);  // a database outage: the slots reconnect
  return [&live, options](std::string& why) {
    const worker::Worker* running = live.load();
    if (running == nullptr) return true;
    const ops::HealthReport h = ops::check_health(
        "", [running] { return loop_status(*running); }, options);
    why = h.reason;
    return h.ok;
  };
}

int run_worker(const config::Config& config, bool drain) {
  config::require_llm_endpoint(config);
  log::info(fmt::format("autonous {} worker starting", version()), {{"version", version()}});
  hold_sighup();
  const engine::EngineSettings settings = engine_settings(config);
  log::info("context budget", {{"tokens", settings.budget.tokens},
                               {"source", settings.budget.source},
                               {"strategy", engine::to_string(settings.context.policy.strategy)},
                               {"tokenizer_data_dir", config.tokenizer_data_dir}});
  if (const std::optional<int> pool = backend::connection_pool_size(config))
    log::info("connection pool", {{"size", *pool}, {"cpu_cores", config::usable_cores()}});
  warn_if_window_unknown(config);
  // A tool's child process that exits must not kill the worker when it writes to its stdin.
  std::signal(SIGPIPE, SIG_IGN);
  const openai::CurlGlobal curl;  // before the MCP servers over HTTP are asked for their tools
  std::shared_ptr<const tools::Toolset> toolset = load_toolset(config);
  // Migrate once, before anything else opens a connection. (A migration runs before the
  // operator surface is up; a signal still stops it at once: it is not blocked yet.)
  std::unique_ptr<backend::Session> migrated = open_database(config);
  std::unique_ptr<ops::Metrics> metrics;
  std::atomic<const worker::Worker*> live{nullptr};
  std::unique_ptr<worker::Worker> w;  // destroyed after the server (declared before it)
  std::unique_ptr<ops::OpsServer> server;
  const ServiceNotify systemd(watchdog_check(config, live));
  if (config.http_listen) {
    // Up before the catch-up below, which may take minutes after an upgrade: /healthz says
    // "starting" rather than refusing connections.
    metrics = std::make_unique<ops::Metrics>(config.openai_model);
    metrics->set_version(std::string(version()));
    server = start_ops_server(config, *config.http_listen, *metrics, [&live] {
      const worker::Worker* running = live.load();
      return running != nullptr ? loop_status(*running) : ops::LoopStatus{0, 0, {}, true, {}};
    });
  }
  catch_up_search(std::move(migrated));
  // From here SIGTERM/SIGINT are taken by the signal thread below (the server's threads block
  // them themselves); before, the default action stops a long catch-up at once.
  const sigset_t signals = block_stop_signals();

  const common::SystemClock clock;
  worker::WorkerDeps deps;
  deps.make_transport = [] { return std::make_unique<openai::CurlTransport>(); };
  deps.counter = &token_counter(config);
  deps.counter_for = [&config](const std::string& model) -> const tokens::TokenCounter& {
    return token_counter_for(config, model);
  };
  deps.clock = &clock;
  deps.toolset = toolset;
  if (metrics)
    deps.on_trail = [m = metrics.get()](const std::vector<events::Event>& trail) {
      m->record(trail);
    };
  w = std::make_unique<worker::Worker>(config, deps, drain);
  live = w.get();
  systemd.ready(fmt::format("working ({} slots)", config.worker_concurrency));

  std::stop_source stop;
  std::stop_source hard;  // a second signal: no grace period
  std::jthread signal_thread = start_signal_thread(signals, stop, hard, systemd);
  w->run(stop.get_token(), hard.get_token());
  // Wake the signal thread now rather than at its next tick: `--drain` exits at once.
  signal_thread.request_stop();
  pthread_kill(signal_thread.native_handle(), SIGUSR1);
  return 0;
}

}  // namespace

void add_worker_command(CLI::App& app, Action& action) {
  auto drain = std::make_shared<bool>(false);
  auto* worker = app.add_subcommand("worker", "Run the daemon (SIGTERM/SIGINT stop it gracefully)");
  worker->add_flag("--drain", *drain, "exit 0 once no task is queued or running");
  worker->callback([&action, drain] {
    action = [drain](const config::Config& c) { return run_worker(c, *drain); };
  });
}

}  // namespace autonous::cmd
