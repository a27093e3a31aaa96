#include "internal/ops/process_metrics.h"

#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <dirent.h>
#include <prometheus/client_metric.h>
#include <time.h>
#include <unistd.h>

namespace autonous::ops {
namespace {

void add(std::vector<prometheus::MetricFamily>& out, const char* name, const char* help,
         prometheus::MetricType type, std::optional<double> value) {
  if (!value) return;
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = *value;
  } else {
    m.gauge.value = *value;
  }
  f.metric.push_back(std::move(m));
  out.push_back(std::move(f));
}

// /proc/self/stat's fields after the command (which may hold spaces and parentheses): field 3 on.
std::optional<std::vector<std::string>> stat_fields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  if (fields.size() < 22) return std::nullopt;
  return fields;
}

// Seconds since the epoch the system booted at: now less the time since boot (not /proc/stat's
// btime, which the unit's ProcSubset=pid hides).
std::optional<double> boot_time() {
  timespec real{};
  timespec boot{};
  if (clock_gettime(CLOCK_REALTIME, &real) != 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
    return std::nullopt;
  auto seconds = [](const timespec& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
  };
  return seconds(real) - seconds(boot);
}

std::optional<double> open_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return std::nullopt;
  double n = 0;
  while (const dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - 1;  // the descriptor that reads the folder
}

std::optional<double> max_fds() {
  std::ifstream in("/proc/self/limits");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream words(line.substr(14));
    std::string soft;
    words >> soft;
    if (soft == "unlimited") return std::nullopt;
    try {
      return std::stod(soft);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

void add_process_metrics(std::vector<prometheus::MetricFamily>& out) {
  using prometheus::MetricType;
  const auto ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const auto page = static_cast<double>(sysconf(_SC_PAGESIZE));
  std::optional<double> cpu, rss, vsize;
  // Computed once: the two clocks read apart (or stepped later) must not move it between scrapes.
  static std::optional<double> start;
  if (const auto f = stat_fields(); f && ticks > 0) {
    // Counted from field 3 (state): utime 14, stime 15, starttime 22, vsize 23, rss 24.
    try {
      cpu = (std::stod((*f)[11]) + std::stod((*f)[12])) / ticks;
      if (const auto boot = boot_time(); boot && !start)
        start = std::round((*boot + std::stod((*f)[19]) / ticks) * ticks) / ticks;
      vsize = std::stod((*f)[20]);
      rss = std::stod((*f)[21]) * page;
    } catch (const std::exception&) {
    }
  }
  add(out, "process_cpu_seconds_total", "User and system CPU time spent, in seconds",
      MetricType::Counter, cpu);
  add(out, "process_resident_memory_bytes", "Resident memory size, in bytes", MetricType::Gauge,
      rss);
  add(out, "process_virtual_memory_bytes", "Virtual memory size, in bytes", MetricType::Gauge,
      vsize);
  add(out, "process_open_fds", "Open file descriptors", MetricType::Gauge, open_fds());
  add(out, "process_max_fds", "The limit on open file descriptors", MetricType::Gauge, max_fds());
  add(out, "process_start_time_seconds", "Start time of the process since the Unix epoch",
      MetricType::Gauge, start);
}

}  // namespace autonous::ops
