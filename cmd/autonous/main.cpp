// autonous: the one binary. argv → subcommand, and the only place exceptions become exit codes:
// 0 success, 2 usage or configuration error (the message names the flag or variable), 1 runtime
// failure.

#include <functional>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cmd/autonous/commands.h"
#include "cmd/autonous/logging.h"
#include "internal/config/config.h"
#include "internal/config/env_file.h"

namespace {

constexpr const char* kFooter =
    "Configuration comes from environment variables (DB_PATH, OPENAI_BASE_URL, ...; see the\n"
    "README). --env-file fills in variables the environment does not set.\n"
    "Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error.";

// Parses argv and runs the subcommand; main() only guards it.
int run(int argc, char** argv) {
  using namespace autonous;  // NOLINT(google-build-using-namespace): main only
  CLI::App app{
      "autonous: a chat-bot backend worker. Front ends queue messages in SQLite; the\n"
      "worker builds each chat's context within a token budget, calls an\n"
      "OpenAI-compatible endpoint and records every step as events.",
      "autonous"};
  app.footer(kFooter);
  app.require_subcommand(1);
  app.fallthrough();
  std::string env_file;
  app.add_option("--env-file", env_file, "KEY=VALUE file; the real environment wins over it");

  std::function<int(const config::Config&)> action;

  auto* migrate =
      app.add_subcommand("migrate", "Apply embedded migrations; print the schema version");
  migrate->callback([&] { action = cmd::run_migrate; });

  cmd::EnqueueOptions enq;
  std::string enq_text;
  auto* enqueue = app.add_subcommand("enqueue", "Queue a message for a chat; print the task id");
  enqueue->add_option("--chat", enq.chat_id, "chat id")->required();
  enqueue->add_option("--priority", enq.priority, "higher runs first (default 0)");
  auto* text_opt = enqueue->add_option("TEXT", enq_text, "message text (default: read stdin)");
  enqueue->callback([&] {
    if (text_opt->count() > 0) enq.text = enq_text;
    action = [&](const config::Config& c) { return cmd::run_enqueue(c, enq); };
  });

  bool drain = false;
  auto* worker = app.add_subcommand("worker", "Run the daemon (SIGTERM/SIGINT stop it gracefully)");
  worker->add_flag("--drain", drain, "exit 0 once no task is queued or running");
  worker->callback(
      [&] { action = [&](const config::Config& c) { return cmd::run_worker(c, drain); }; });

  cmd::ContextOptions ctx;
  auto* context = app.add_subcommand(
      "context", "Dry run: print as JSON the messages the worker would send now, and the figures");
  auto* ctx_chat = context->add_option("--chat", ctx.chat_id, "chat id (required without stats)");
  context->add_option("--text", ctx.text, "the user message to assume (default: none)");
  cmd::ContextStatsOptions stats_opts;
  std::string stats_chat;
  std::string stats_since;
  auto* stats = context->add_subcommand(
      "stats", "Token estimate vs the API's prompt_tokens, per model and counter, from events");
  auto* stats_chat_opt = stats->add_option("--chat", stats_chat, "only this chat");
  auto* stats_since_opt = stats->add_option(
      "--since", stats_since, "only events at or after this UTC time, e.g. 2026-11-01");
  stats->callback([&] {
    if (stats_chat_opt->count() > 0) stats_opts.chat_id = stats_chat;
    if (stats_since_opt->count() > 0) stats_opts.since = stats_since;
    action = [&](const config::Config& c) { return cmd::run_context_stats(c, stats_opts); };
  });
  context->callback([&] {
    if (stats->parsed()) return;
    if (ctx_chat->count() == 0) throw CLI::RequiredError("--chat");
    action = [&](const config::Config& c) { return cmd::run_context(c, ctx); };
  });

  cmd::EventsOptions ev;
  int64_t ev_task = 0;
  std::string ev_type;
  auto* events = app.add_subcommand("events", "Print events as JSON lines");
  auto* task_opt = events->add_option("--task", ev_task, "only this task's events");
  auto* type_opt =
      events->add_option("--type", ev_type, "only events of this type, e.g. llm.response");
  events->add_flag("--follow,-f", ev.follow, "keep printing new events");
  events->callback([&] {
    if (task_opt->count() > 0) ev.task_id = ev_task;
    if (type_opt->count() > 0) ev.type = ev_type;
    action = [&](const config::Config& c) { return cmd::run_events(c, ev); };
  });

  bool status_json = false;
  auto* status = app.add_subcommand("status", "Task counts by status, oldest queued age, failures");
  status->add_flag("--json", status_json, "print one JSON object");
  status->callback(
      [&] { action = [&](const config::Config& c) { return cmd::run_status(c, status_json); }; });

  cmd::RequeueOptions rq;
  int64_t rq_task = 0;
  auto* requeue = app.add_subcommand("requeue", "Put failed tasks back in the queue");
  auto* rq_task_opt = requeue->add_option("--task", rq_task, "this failed task");
  requeue->add_flag("--failed", rq.failed, "every failed task");
  requeue->callback([&] {
    if (rq_task_opt->count() > 0) rq.task_id = rq_task;
    action = [&](const config::Config& c) { return cmd::run_requeue(c, rq); };
  });

  cmd::TokensOptions tok;
  std::string tok_encoding;
  auto* tokens = app.add_subcommand(
      "tokens", "Count the tokens of a text: prints {\"encoding\", \"tokens\", \"bytes\"}");
  auto* enc_opt =
      tokens
          ->add_option("--encoding", tok_encoding,
                       "auto, cl100k_base, o200k_base, estimate or chars4 (default: TOKEN_COUNTER)")
          ->check(CLI::IsMember({"auto", "cl100k_base", "o200k_base", "estimate", "chars4"}));
  tokens->add_option("FILE", tok.file, "file to count, or - for stdin (default)");
  tokens->callback([&] {
    if (enc_opt->count() > 0) tok.encoding = tok_encoding;
    action = [&](const config::Config& c) { return cmd::run_tokens(c, tok); };
  });

  cmd::ChatOptions chat_opts;
  auto* chat = app.add_subcommand(
      "chat", "A chat's own context settings (over the environment's) and its clear point");
  chat->require_subcommand(1);
  auto* chat_show = chat->add_subcommand("show", "Print the chat's settings, effective values and "
                                                 "where each comes from (JSON)");
  auto* chat_set = chat->add_subcommand(
      "set", "Set the chat's own settings (validated; nothing is written when one is bad)");
  auto* chat_reset =
      chat->add_subcommand("reset", "Drop the chat's own settings: back to the environment's");
  auto* chat_clear = chat->add_subcommand(
      "clear", "Start the chat's context fresh after this point; stored history is kept");
  for (auto* sub : {chat_show, chat_set, chat_reset, chat_clear})
    sub->add_option("ID", chat_opts.chat_id, "chat id")->required();
  context::ChatOverrides& set = chat_opts.values;
  chat_set->add_option("--strategy", chat_opts.strategy,
                       "sliding_window, token_budget or summarize");
  chat_set->add_option("--max-tokens", set.max_tokens,
                       "whole-prompt budget in tokens (at most window - reserve)");
  chat_set->add_option("--recent", set.recent_messages, "sliding_window's newest-message count");
  chat_set->add_option("--soft", set.soft, "usage share where Normal starts");
  chat_set->add_option("--warn", set.warn, "usage share where Aggressive starts");
  chat_set->add_option("--hard", set.hard, "usage share where Emergency starts");
  chat_set->add_option("--target", set.target, "usage share compression aims at");
  chat_show->callback([&] {
    action = [&](const config::Config& c) { return cmd::run_chat_show(c, chat_opts); };
  });
  chat_set->callback([&] {
    action = [&](const config::Config& c) { return cmd::run_chat_set(c, chat_opts); };
  });
  chat_reset->callback([&] {
    action = [&](const config::Config& c) { return cmd::run_chat_reset(c, chat_opts); };
  });
  chat_clear->callback([&] {
    action = [&](const config::Config& c) { return cmd::run_chat_clear(c, chat_opts); };
  });
  for (auto* sub : {chat_show, chat_set, chat_reset, chat_clear}) sub->footer(kFooter);

  for (auto* sub : app.get_subcommands({})) sub->footer(kFooter);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);  // prints help, exit 0
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message naming the flag
    return 2;
  }

  try {
    config::EnvLookup env = config::process_env();
    if (!env_file.empty()) env = config::layered_env(env, config::read_env_file(env_file));
    const config::Config config = config::load_config(env);
    cmd::setup_logging(config);
    return action(config);
  } catch (const config::ConfigError& e) {
    std::cerr << "autonous: configuration error: " << e.what() << "\n";
    return 2;
  } catch (const cmd::UsageError& e) {
    std::cerr << "autonous: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "autonous: error: " << e.what() << "\n";
    return 1;
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
