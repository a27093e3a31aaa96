#include "internal/ops/health.h"

#include <nlohmann/json.hpp>

namespace autonous::ops {

HealthReport check_health(const std::string& db_problem, const LoopProbe& loop,
                          const HealthOptions& options) {
  HealthReport report;
  nlohmann::json body = {{"status", "ok"}};
  if (loop) {
    const LoopStatus s = loop();
    nlohmann::json ages = nlohmann::json::array();
    for (size_t i = 0; i < s.beat_age_ms.size(); ++i) {
      const int64_t age = s.beat_age_ms[i];
      ages.push_back(age);
      if (report.ok && age > options.stall_limit.count()) {
        report.ok = false;
        report.reason = "slot " + std::to_string(i) + " silent for " + std::to_string(age / 1000) +
                        " s (limit " + std::to_string(options.stall_limit.count() / 1000) + " s)";
      }
    }
    for (size_t i = 0; report.ok && i < s.offline_ms.size(); ++i)
      if (s.offline_ms[i] > options.offline_limit.count()) {
        report.ok = false;
        report.reason = "slot " + std::to_string(i) + " has been connecting to the database for " +
                        std::to_string(s.offline_ms[i] / 1000) + " s";
      }
    if (s.starting) body["status"] = "starting";
    body["slots"] = s.slots;
    body["busy"] = s.busy;
    body["beat_age_ms"] = ages;
  }
  if (report.ok && !db_problem.empty()) {
    report.ok = false;
    report.reason = db_problem;
  }
  body["database"] = db_problem.empty() ? "ok" : db_problem;
  if (!report.ok) {
    body["status"] = "unhealthy";
    body["reason"] = report.reason;
  }
  report.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return report;
}

}  // namespace autonous::ops
