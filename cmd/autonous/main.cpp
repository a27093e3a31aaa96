// autonous: the one binary. argv → subcommand (each registers itself, commands.h), and the only
// place exceptions become exit codes: 0 success, 2 usage or configuration error (naming the
// flag or variable), 1 runtime failure.

#include <iostream>

#include <CLI/CLI.hpp>

#include "cmd/autonous/commands.h"
#include "cmd/autonous/logging.h"
#include "cmd/autonous/version.h"
#include "internal/config/env_file.h"
#include "internal/engine/model_presets.h"

namespace {

constexpr const char* kFooter =
    "Configuration comes from environment variables (DB_PATH, OPENAI_BASE_URL, ...; see\n"
    "docs/configuration.md). --env-file fills in variables the environment does not set.\n"
    "Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error.";

void add_footer(CLI::App& app) {
  for (auto* sub : app.get_subcommands({})) add_footer(*sub->footer(kFooter));
}

// Parses argv and runs the subcommand; main() only guards it.
int run(int argc, char** argv) {
  using namespace autonous;  // NOLINT(google-build-using-namespace): main only
  CLI::App app{
      "autonous: a chat-bot backend worker. Front ends queue messages in SQLite (or\n"
      "PostgreSQL); the worker builds each chat's context within a token budget, calls an\n"
      "OpenAI-compatible endpoint and records every step as events.",
      "autonous"};
  app.footer(kFooter);
  app.require_subcommand(1);
  app.set_version_flag("--version", "autonous " + std::string(cmd::version()),
                       "Print the version and exit");
  app.fallthrough();
  std::string env_file;
  app.add_option("--env-file", env_file, "KEY=VALUE file; the real environment wins over it");
  cmd::Action action;
  for (auto* add : {cmd::add_migrate_command, cmd::add_enqueue_command, cmd::add_worker_command,
                    cmd::add_context_command, cmd::add_events_command, cmd::add_status_command,
                    cmd::add_requeue_command, cmd::add_cancel_command, cmd::add_wait_command,
                    cmd::add_tokens_command, cmd::add_chat_command, cmd::add_dashboard_command,
                    cmd::add_copy_command})
    add(app, action);
  add_footer(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help: prints it, exit 0
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message naming the flag
    return 2;
  }
  try {
    config::EnvLookup env = config::process_env();
    if (!env_file.empty()) env = config::layered_env(env, config::read_env_file(env_file));
    cmd::prefer_json_errors(env("LOG_FORMAT"));
    const config::Config config = config::load_config(env);
    cmd::setup_logging(config);
    try {
      engine::install_models_file(config.models_file);
    } catch (const engine::ModelsFileError& e) {
      throw config::ConfigError("MODELS_FILE", e.what());
    }
    return action(config);
  } catch (const config::ConfigError& e) {
    return cmd::report_exit(2, std::string("configuration error: ") + e.what());
  } catch (const cmd::UsageError& e) {
    return cmd::report_exit(2, e.what());
  } catch (const std::exception& e) {
    return cmd::report_exit(1, std::string("error: ") + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // setting up the command line itself failed
    std::cerr << "autonous: error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    return 1;
  }
}
