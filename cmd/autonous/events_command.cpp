// `autonous events [--task ID] [--type T] [--follow]`: the event trail as JSON lines.

#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include <CLI/CLI.hpp>
#include <SQLiteCpp/Database.h>

#include "cmd/autonous/command_support.h"
#include "cmd/autonous/commands.h"
#include "internal/backend/postgres/events.h"
#include "internal/backend/postgres/settled_ids.h"
#include "internal/backend/sqlite/events.h"
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
// ids is waited for until SettledIds says no transaction that could fill it is still running (a
// rolled-back insert's gap is passed at once), but at most kGapWait (a transaction left open
// elsewhere holds the settled id back). A filtered follow reads the settled events through the
// filter, then every newer one (printing those that match), so its gaps show too.
constexpr std::chrono::seconds kGapWait{5};
using Clock = std::chrono::steady_clock;

bool matches(const events::StoredEvent& e, const EventsOptions& options) {
  return (!options.task_id || e.event.task_id == options.task_id) &&
         (!options.type || e.event.type == *options.type);
}

// The settled id after waiting up to a second for what is visible now to settle.
int64_t settle_now(events::SettledIds& ids) {
  ids.poll();  // a checkpoint of what is visible now
  const int64_t visible = ids.pending();
  const auto until = Clock::now() + std::chrono::seconds(1);
  while (ids.poll() < visible && !ids.standby() && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (ids.standby()) ids.give_up();  // a replica: what it shows now is what it has
  return ids.settled();
}

// Prints the events matching `options` with ids up to `upto`; returns `upto`.
int64_t print_existing_pg(db::pg::Connection& c, const EventsOptions& options, int64_t upto) {
  events::EventFilter filter;
  filter.task_id = options.task_id;
  filter.type = options.type;
  for (;;) {
    const auto batch = events::query(c, filter);
    for (const auto& e : batch) {
      if (e.id > upto) return upto;
      std::cout << events::to_json_line(e) << "\n";
      filter.after_id = e.id;
    }
    if (batch.size() < static_cast<size_t>(filter.limit)) return upto;
  }
}

int run_events_pg(const config::Config& config, const EventsOptions& options) {
  auto c = open_pg(config);
  events::EventFilter filter;
  events::SettledIds ids(*c);
  if (!options.follow) {
    filter.task_id = options.task_id;
    filter.type = options.type;
  } else if (options.task_id || options.type) {
    filter.after_id = print_existing_pg(*c, options, settle_now(ids));
  }
  Clock::time_point gap_since{};  // when the first unprinted gap was seen; {} none
  for (;;) {
    const auto batch = events::query(*c, filter);
    bool gap = false;
    for (const auto& e : batch) {
      if (options.follow && e.id != filter.after_id + 1 && e.id - 1 > ids.settled() &&
          ids.poll() < e.id - 1) {
        const auto now = Clock::now();
        if (gap_since == Clock::time_point{}) gap_since = now;
        if (now - gap_since < kGapWait) {
          gap = true;
          break;
        }
        ids.give_up();  // a transaction left open: the gaps it holds back are passed too
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
