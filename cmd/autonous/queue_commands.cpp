// `autonous migrate | enqueue | status | requeue`: the queue as a front end and an operator use
// it.

#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cmd/autonous/command_support.h"
#include "cmd/autonous/commands.h"
#include "internal/backend/session.h"
#include "internal/common/clock.h"
#include "internal/common/text.h"
#include "internal/common/utf8.h"
#include "internal/events/event_log.h"
#include "internal/queue/task_queue.h"

namespace autonous::cmd {
namespace {

struct EnqueueOptions {
  std::string chat_id;
  int priority = 0;
  std::optional<std::string> text;  // nullopt: read stdin
};

struct RequeueOptions {
  std::optional<int64_t> task_id;
  bool failed = false;
};

int run_migrate(const config::Config& config) {
  const auto db = open_database(config);
  std::cout << "schema version " << db->schema_version() << "\n";
  // The search index catches up with every row written since (a whole history after 0007).
  const int64_t indexed = db->index_search();
  if (indexed > 0) std::cerr << "search index: " << indexed << " queued row(s) indexed\n";
  return 0;
}

int run_enqueue(const config::Config& config, const EnqueueOptions& options) {
  if (common::trim(options.chat_id).empty()) throw UsageError("--chat: must not be empty");
  if (options.chat_id.size() > 256) throw UsageError("--chat: a chat id has at most 256 bytes");
  const std::string text = options.text ? *options.text : read_all(std::cin);
  if (common::trim(text).empty())
    throw UsageError("TEXT: empty message (give TEXT or pipe it on stdin)");
  const auto db = open_database(config);
  std::cout << db->queue().enqueue(options.chat_id, text, options.priority) << "\n";
  return 0;
}

// Server text and chat ids may hold escape sequences: shown escaped, never interpreted by the
// operator's terminal.
std::string terminal_safe(const std::string& raw) {
  const std::string text = common::sanitize_utf8(raw);  // a stray 0x9B byte is no CSI either
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    const bool c1 = u == 0xC2 && i + 1 < text.size() &&
                    (static_cast<unsigned char>(text[i + 1]) & 0xE0) == 0x80;  // U+0080-U+009F
    if (u < 0x20 || u == 0x7F) {
      out += fmt::format("\\x{:02x}", u);
    } else if (c1) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[++i]));
    } else {
      out += text[i];
    }
  }
  return out;
}

void print_status_json(const queue::QueueStats& s) {
  nlohmann::ordered_json j;
  j["queued"] = s.queued;
  j["running"] = s.running;
  j["done"] = s.done;
  j["failed"] = s.failed;
  j["cancelled"] = s.cancelled;
  j["oldest_queued_age_seconds"] =
      s.oldest_queued_age_seconds ? nlohmann::ordered_json(*s.oldest_queued_age_seconds) : nullptr;
  auto failures = nlohmann::ordered_json::array();
  for (const auto& f : s.recent_failures)
    failures.push_back({{"task_id", f.task_id},
                        {"chat_id", f.chat_id},
                        {"error", f.error},
                        {"finished_at", f.finished_at}});
  j["recent_failures"] = failures;
  std::cout << events::escape_c1(
                   j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace))
            << "\n";
}

int run_status(const config::Config& config, bool json) {
  const auto db = open_database(config, /*for_reading=*/true);
  const queue::QueueStats s = db->queue().stats(common::SystemClock().now());
  if (json) {
    print_status_json(s);
    return 0;
  }
  std::cout << "queued   " << s.queued << "\nrunning  " << s.running << "\ndone     " << s.done
            << "\nfailed   " << s.failed << "\ncancelled " << s.cancelled << "\n";
  if (s.oldest_queued_age_seconds)
    std::cout << "oldest queued task waiting "
              << fmt::format("{:.1f}", *s.oldest_queued_age_seconds) << " s\n";
  if (!s.recent_failures.empty()) {
    std::cout << "recent failures:\n";
    for (const auto& f : s.recent_failures)
      std::cout << "  task " << f.task_id << " chat " << terminal_safe(f.chat_id) << " at "
                << f.finished_at << ": " << terminal_safe(f.error) << "\n";
  }
  return 0;
}

int run_requeue(const config::Config& config, const RequeueOptions& options) {
  if (options.task_id.has_value() == options.failed)
    throw UsageError("requeue: give exactly one of --task ID or --failed");
  const auto db = open_database(config);
  if (options.failed) {
    std::cout << "requeued " << db->queue().requeue_failed() << " task(s)\n";
    return 0;
  }
  if (!db->queue().requeue(*options.task_id)) {
    std::cerr << "autonous: task " << *options.task_id << " is not failed (or does not exist)\n";
    return 1;
  }
  std::cout << "requeued task " << *options.task_id << "\n";
  return 0;
}

}  // namespace

void add_migrate_command(CLI::App& app, Action& action) {
  app.add_subcommand("migrate", "Apply embedded migrations; print the schema version")
      ->callback([&action] { action = run_migrate; });
}

void add_enqueue_command(CLI::App& app, Action& action) {
  auto enq = std::make_shared<EnqueueOptions>();
  auto text = std::make_shared<std::string>();
  auto* enqueue = app.add_subcommand("enqueue", "Queue a message for a chat; print the task id");
  enqueue->add_option("--chat", enq->chat_id, "chat id")->required();
  enqueue->add_option("--priority", enq->priority, "higher runs first (default 0)");
  auto* text_opt = enqueue->add_option("TEXT", *text, "message text (default: read stdin)");
  enqueue->callback([&action, enq, text, text_opt] {
    if (text_opt->count() > 0) enq->text = *text;
    action = [enq](const config::Config& c) { return run_enqueue(c, *enq); };
  });
}

void add_status_command(CLI::App& app, Action& action) {
  auto json = std::make_shared<bool>(false);
  auto* status = app.add_subcommand("status", "Task counts by status, oldest queued age, failures");
  status->add_flag("--json", *json, "print one JSON object");
  status->callback([&action, json] {
    action = [json](const config::Config& c) { return run_status(c, *json); };
  });
}

void add_requeue_command(CLI::App& app, Action& action) {
  auto rq = std::make_shared<RequeueOptions>();
  auto rq_task = std::make_shared<int64_t>(0);
  auto* requeue = app.add_subcommand("requeue", "Put failed tasks back in the queue");
  auto* rq_task_opt = requeue->add_option("--task", *rq_task, "this failed task");
  requeue->add_flag("--failed", rq->failed, "every failed task");
  requeue->callback([&action, rq, rq_task, rq_task_opt] {
    if (rq_task_opt->count() > 0) rq->task_id = *rq_task;
    action = [rq](const config::Config& c) { return run_requeue(c, *rq); };
  });
}

}  // namespace autonous::cmd
