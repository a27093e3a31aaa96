#pragma once
// The process's own figures under the names every Prometheus client library uses
// (process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds), read from /proc/self at each
// scrape (nothing outside it: the unit's ProcSubset=pid hides the rest of /proc). A figure that
// cannot be read (no /proc) is left out, not reported as 0.

#include <vector>

#include <prometheus/metric_family.h>

namespace autonous::ops {

void add_process_metrics(std::vector<prometheus::MetricFamily>& out);

}  // namespace autonous::ops
