// `autonous events [--task ID] [--type T] [--follow]`: the event trail as JSON lines.

#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include <CLI/CLI.hpp>

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
    for (const auto& e : feed->next(more)) std::cout << events::to_json_line(e) << "\n";
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
