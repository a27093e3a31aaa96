#pragma once
// The subcommand families of `autonous`. Each add_*_commands() registers its subcommands,
// their options and --help on `app`, and on parse sets `action` to the command's body. A body
// returns the exit code and throws ConfigError or UsageError (→ 2) or anything else (→ 1).

#include <functional>
#include <stdexcept>

#include "internal/config/config.h"

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
void add_migrate_command(CLI::App& app, Action& action);  // queue_commands.cpp
void add_enqueue_command(CLI::App& app, Action& action);  // queue_commands.cpp
void add_worker_command(CLI::App& app, Action& action);   // worker_command.cpp
void add_context_command(CLI::App& app, Action& action);  // context_commands.cpp (+ stats)
void add_events_command(CLI::App& app, Action& action);   // events_command.cpp
void add_status_command(CLI::App& app, Action& action);   // queue_commands.cpp
void add_requeue_command(CLI::App& app, Action& action);  // queue_commands.cpp
void add_tokens_command(CLI::App& app, Action& action);   // context_commands.cpp
void add_chat_command(CLI::App& app, Action& action);     // chat_commands.cpp (show|set|…)

}  // namespace autonous::cmd
