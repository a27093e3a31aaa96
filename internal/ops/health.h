#pragma once
// Health: the answer of `GET /healthz`. Healthy when every worker slot showed a sign of life
// within the stall limit (a slot beats on every pass of its loop and every poll during an HTTP
// call) and the database answers: takes a write lock and gives it back (BEGIN IMMEDIATE;
// ROLLBACK) for a worker, answers a read for `autonous dashboard`. A worker still catching up
// its search index before the slots start is healthy, with status "starting", and then only
// needs the database to answer a read (the catch-up holds the write lock most of the time).

#include <chrono>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "internal/ops/metrics.h"

namespace autonous::ops {

struct HealthReport {
  bool ok = true;
  std::string reason;  // empty when ok: "slot 2 silent for 75 s", "database refuses writes: ..."
  std::string body;    // the JSON body
};

struct HealthOptions {
  bool need_write = true;  // a worker's database must take writes
  // A slot silent this long is wedged (the worker passes max(60 s, 3 × POLL_INTERVAL_MS)).
  std::chrono::milliseconds stall_limit{60000};
  // A slot reconnecting this long (the server is down, or refuses its logins) is unhealthy.
  std::chrono::milliseconds offline_limit{10000};
};

// The report from the slots (`loop`; empty for `autonous dashboard`) and a database probe's
// result (`db_problem`, from PageDb::probe).
HealthReport check_health(const std::string& db_problem, const LoopProbe& loop,
                          const HealthOptions& options);

}  // namespace autonous::ops
