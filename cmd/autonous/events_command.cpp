// `autonous events [--task ID] [--type T] [--follow]`: the event trail as JSON lines.

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cmd/autonous/command_support.h"
#include "cmd/autonous/commands.h"
#include "internal/backend/session.h"
#include "internal/events/event_log.h"

namespace autonous::cmd {
namespace {

struct EventsOptions {
  std::optional<int64_t> task_id;
  std::optional<std::string> type;
  bool follow = false;
};

// Connects `db` again after its connection was lost, until it succeeds.
void reconnect_follow(backend::Session& db, const std::string& why) {
  spdlog::warn("events --follow: the database connection was lost ({}); connecting again", why);
  std::chrono::milliseconds wait(200);
  for (;;) {
    std::this_thread::sleep_for(wait);
    try {
      db.reconnect();
      spdlog::info("events --follow: connected again");
      return;
    } catch (const std::exception& e) {
      spdlog::warn("events --follow: still no connection: {}", e.what());
      wait = std::min(wait * 2, std::chrono::milliseconds(5000));
    }
  }
}

int run_events(const config::Config& config, const EventsOptions& options) {
  const auto db = open_database(config, /*for_reading=*/true);
  events::EventFilter filter;
  filter.task_id = options.task_id;
  filter.type = options.type;
  // Following, the feed never skips an event whose transaction commits after a newer one was
  // printed (on PostgreSQL it waits out such gaps, a few seconds at most).
  const std::unique_ptr<backend::EventFeed> feed = db->events().feed(filter, options.follow);
  for (;;) {
    bool more = false;
    std::vector<events::StoredEvent> batch;
    try {
      batch = feed->next(more);
    } catch (const std::exception& e) {
      // A follower outlives a server restart or a terminated session, as the worker does: it
      // connects again (backing off up to 5 s, saying so on stderr) and goes on after the last
      // event it printed. Without --follow, or when the connection was not lost, it is an error.
      if (!options.follow || !db->lost()) throw;
      reconnect_follow(*db, e.what());
      continue;
    }
    for (const auto& e : batch) std::cout << events::to_json_line(e) << "\n";
    std::cout.flush();
    if (more) continue;
    if (!options.follow) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace

void add_events_command(CLI::App& app, Action& action) {
  auto ev = std::make_shared<EventsOptions>();
  auto task = std::make_shared<int64_t>(0);
  auto type = std::make_shared<std::string>();
  auto* events = app.add_subcommand("events", "Print events as JSON lines");
  auto* task_opt = events->add_option("--task", *task, "only this task's events");
  auto* type_opt =
      events->add_option("--type", *type, "only events of this type, e.g. llm.response");
  events->add_flag("--follow,-f", ev->follow, "keep printing new events");
  events->callback([&action, ev, task, type, task_opt, type_opt] {
    if (task_opt->count() > 0) ev->task_id = *task;
    if (type_opt->count() > 0) ev->type = *type;
    action = [ev](const config::Config& c) { return run_events(c, *ev); };
  });
}

}  // namespace autonous::cmd
