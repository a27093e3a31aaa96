// `autonous dashboard [--listen ADDR]`: the operator surface (internal/ops) straight from a
// database, without a worker: the dashboard's pages, /metrics (the database's gauges) and
// /healthz (the database answers a read). Also start_ops_server(), which the worker uses for
// HTTP_LISTEN.

#include <csignal>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cmd/autonous/command_support.h"
#include "cmd/autonous/commands.h"
#include "cmd/autonous/version.h"
#include "internal/backend/session.h"
#include "internal/common/log.h"

namespace autonous::cmd {

std::unique_ptr<ops::OpsServer> start_ops_server(const config::Config& config,
                                                 const config::ListenAddress& listen,
                                                 ops::Metrics& metrics, ops::LoopProbe loop) {
  config::check_listen_token(listen, config.http_token);
  ops::OpsOptions o;
  o.listen = listen;
  o.token = config.http_token;
  o.settings = engine_settings(config).context;
  o.metrics = &metrics;
  o.need_write = static_cast<bool>(loop);
  o.loop = std::move(loop);
  o.stall_limit =
      std::max<std::chrono::milliseconds>(std::chrono::seconds(60), 3 * config.poll_interval);
  o.open_db = [config, write = o.need_write] { return backend::open_page_db(config, write); };
  auto server = std::make_unique<ops::OpsServer>(std::move(o));
  config::ListenAddress bound = listen;
  bound.port = server->port();
  spdlog::info("operator surface listening on http://{}/ (dashboard, /metrics, /healthz){}",
               bound.to_string(), config.http_token.empty() ? "" : "; bearer token required");
  return server;
}

namespace {

int run_dashboard(const config::Config& config, const std::string& listen_flag) {
  config::ListenAddress listen;
  if (!listen_flag.empty()) {
    try {
      listen = config::parse_listen_address(listen_flag);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--listen: ") + e.what());
    }
  } else if (config.http_listen) {
    listen = *config.http_listen;
  }
  config::check_listen_token(listen, config.http_token);  // before touching any file
  log::info(fmt::format("autonous {} dashboard starting", version()), {{"version", version()}});
  // Connects (or says why not) and migrates an older schema; refuses a stale read-only file and
  // a missing one (it reads a database, it does not create one).
  (void)backend::open_session(config, backend::OpenOptions{true, true, true});
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);                    // never fatal: logged and ignored
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the server's threads start
  ops::Metrics metrics(config.openai_model);
  metrics.set_version(std::string(version()));
  const auto server = start_ops_server(config, listen, metrics, {});
  listen.port = server->port();
  std::cout << "dashboard: http://" << listen.to_string() << "/ (Ctrl-C stops it)" << std::endl;
  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP)
    log::info("SIGHUP ignored", {{"signal", "SIGHUP"}});
  spdlog::info("signal received; dashboard stopping");
  return 0;
}

}  // namespace

void add_dashboard_command(CLI::App& app, Action& action) {
  auto listen = std::make_shared<std::string>();
  auto* dash = app.add_subcommand(
      "dashboard", "Serve the read-only dashboard, /metrics and /healthz from the database");
  dash->add_option("--listen", *listen,
                   "HOST:PORT or PORT (default: HTTP_LISTEN, else 127.0.0.1:9464); a non-loopback "
                   "address needs HTTP_TOKEN");
  dash->callback([&action, listen] {
    action = [listen](const config::Config& c) { return run_dashboard(c, *listen); };
  });
}

}  // namespace autonous::cmd
