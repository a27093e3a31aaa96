#pragma once
// The subcommand families of `autonous`. Each add_*_commands() registers its subcommands,
// their options and --help on `app`, and on parse sets `action` to the command's body. A body
// returns the exit code and throws ConfigError or UsageError (→ 2) or anything else (→ 1).

#include <functional>
#include <memory>
#include <stdexcept>

#include "internal/config/config.h"
#include "internal/ops/metrics.h"
#include "internal/ops/ops_server.h"

namespace CLI {
class App;
}

namespace autonous::cmd {

// A usage error found after parsing (empty text, a missing flag): exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using Action = std::function<int(const config::Config&)>;

// Each registers one subcommand; main() calls them in --help's order.
void add_migrate_command(CLI::App& app, Action& action);    // queue_commands.cpp
void add_enqueue_command(CLI::App& app, Action& action);    // queue_commands.cpp
void add_worker_command(CLI::App& app, Action& action);     // worker_command.cpp
void add_context_command(CLI::App& app, Action& action);    // context_commands.cpp (+ stats)
void add_events_command(CLI::App& app, Action& action);     // events_command.cpp
void add_status_command(CLI::App& app, Action& action);     // queue_commands.cpp
void add_requeue_command(CLI::App& app, Action& action);    // queue_commands.cpp
void add_tokens_command(CLI::App& app, Action& action);     // context_commands.cpp
void add_chat_command(CLI::App& app, Action& action);       // chat_commands.cpp (show|set|…)
void add_dashboard_command(CLI::App& app, Action& action);  // dashboard_command.cpp
void add_copy_command(CLI::App& app, Action& action);       // copy_command.cpp
void add_cancel_command(CLI::App& app, Action& action);     // task_commands.cpp
void add_wait_command(CLI::App& app, Action& action);       // task_commands.cpp

// Starts the operator surface on `listen` (HTTP_LISTEN, or `dashboard --listen`). With `loop` (a
// worker's slots) /healthz also needs a write lock. Throws ConfigError("HTTP_TOKEN") for a
// non-loopback address without a token, std::runtime_error when it cannot bind.
std::unique_ptr<ops::OpsServer> start_ops_server(const config::Config& config,
                                                 const config::ListenAddress& listen,
                                                 ops::Metrics& metrics, ops::LoopProbe loop);

}  // namespace autonous::cmd
