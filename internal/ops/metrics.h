#pragma once
// Metrics: what `GET /metrics` exposes, in Prometheus text format (prometheus-cpp's registry and
// serializer: label escaping and the exposition rules done by a maintained library).
// Two sources: this process's counters and histograms, fed with every event trail the worker
// commits (record()); and gauges read from the database at scrape time (tasks by status, the
// oldest queued task's age), so every worker and `autonous dashboard` report the same numbers.
// The names are listed in docs/operations.md; three are contracts: autonous_tasks{status},
// autonous_llm_request_duration_seconds, autonous_llm_tokens_total{kind}.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "internal/events/event_log.h"
#include "internal/ops/task_counts.h"

namespace autonous::ops {

// The worker's slots, as /metrics and /healthz see them.
struct LoopStatus {
  int slots = 0;
  int busy = 0;
  std::vector<int64_t> beat_age_ms;  // per slot; -1 before its first beat
  bool starting = false;             // the worker is still catching up before its slots run
  std::vector<int64_t> offline_ms;   // per slot: how long it has been reconnecting; 0 when not
};
using LoopProbe = std::function<LoopStatus()>;

class Metrics {
 public:
  // `model`: the label for an LLM call whose trail names none (OPENAI_MODEL).
  explicit Metrics(std::string model);
  // autonous_build_info{version} 1 from now on (the binary's version: cmd/autonous/version.h).
  void set_version(std::string version);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Counts one committed turn's events. Thread-safe; ignores what it does not know.
  void record(const std::vector<events::Event>& trail);

  // The exposition: the process's metrics (when `loop` is set, the slots too) and the database's
  // gauges read through `db` (tasks by status through `counts`). Throws the backend's exception
  // when the database cannot be read.
  std::string render(PageDb& db, TaskCounts& counts, const LoopProbe& loop) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The content type of the exposition.
inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace autonous::ops
