// `autonous events [--task ID] [--type T] [--follow]`: the event trail as JSON lines.

#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include <CLI/CLI.hpp>
#include <SQLiteCpp/Database.h>

#include "cmd/autonous/command_support.h"
#include "cmd/autonous/commands.h"
#include "internal/events/event_log.h"

namespace autonous::cmd {
namespace {

struct EventsOptions {
  std::optional<int64_t> task_id;
  std::optional<std::string> type;
  bool follow = false;
};

// On PostgreSQL, ids are given out at insert and transactions commit in any order: an event
// with a lower id may become visible after a higher one was printed. Following, a gap in the
// ids is waited for (up to kGapWait; a rolled-back insert leaves a gap for good) before the
// events after it are printed. A filtered follow reads the existing events through the filter,
// then every new one (printing those that match), so its gaps show too.
constexpr std::chrono::seconds kGapWait{5};

bool matches(const events::StoredEvent& e, const EventsOptions& options) {
  return (!options.task_id || e.event.task_id == options.task_id) &&
         (!options.type || e.event.type == *options.type);
}

// Prints the events matching `options` with ids up to the newest now; returns that id.
int64_t print_existing_pg(db::pg::Connection& c, const EventsOptions& options) {
  const int64_t horizon = c.query("SELECT coalesce(max(id), 0) FROM events").int64(0, 0);
  events::EventFilter filter;
  filter.task_id = options.task_id;
  filter.type = options.type;
  for (;;) {
    const auto batch = events::query(c, filter);
    for (const auto& e : batch) {
      if (e.id > horizon) return horizon;
      std::cout << events::to_json_line(e) << "\n";
      filter.after_id = e.id;
    }
    if (batch.size() < static_cast<size_t>(filter.limit)) return horizon;
  }
}

int run_events_pg(const config::Config& config, const EventsOptions& options) {
  auto c = open_pg(config);
  events::EventFilter filter;
  if (!options.follow) {
    filter.task_id = options.task_id;
    filter.type = options.type;
  } else if (options.task_id || options.type) {
    filter.after_id = print_existing_pg(*c, options);
  }
  using Clock = std::chrono::steady_clock;
  Clock::time_point gap_since{};  // when the first unprinted gap was seen; {} none
  for (;;) {
    const auto batch = events::query(*c, filter);
    bool gap = false;
    for (const auto& e : batch) {
      if (options.follow && e.id != filter.after_id + 1 && filter.after_id > 0) {
        const auto now = Clock::now();
        if (gap_since == Clock::time_point{}) gap_since = now;
        if (now - gap_since < kGapWait) {
          gap = true;
          break;
        }
      }
      gap_since = Clock::time_point{};
      if (matches(e, options)) std::cout << events::to_json_line(e) << "\n";
      filter.after_id = e.id;
    }
    std::cout.flush();
    if (!gap && batch.size() == static_cast<size_t>(filter.limit)) continue;
    if (!options.follow) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int run_events(const config::Config& config, const EventsOptions& options) {
  if (!config.database_url.empty()) return run_events_pg(config, options);
  auto db = open_db_for_reading(config);
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
