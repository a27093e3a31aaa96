#include "internal/worker/fallback.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace autonous::worker {

bool is_provider_failure(std::string_view reason) {
  if (reason == "timeout" || reason == "http_408" || reason == "http_429") return true;
  return reason.size() == 8 && reason.substr(0, 6) == "http_5" &&
         std::all_of(reason.begin() + 6, reason.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int provider_failures_before(const std::vector<events::StoredEvent>& retries, int attempt) {
  // Each attempt's end as its newest llm.retry says (a later one for the same number comes
  // from after a requeue, which restarts the count: the newest wins).
  std::map<int, std::pair<int64_t, bool>> ends;  // attempt -> (event id, provider failure)
  for (const events::StoredEvent& e : retries) {
    const nlohmann::json p = nlohmann::json::parse(e.event.payload, nullptr, false);
    if (!p.is_object() || p.value("recompress", false)) continue;
    const auto a = p.find("attempt");
    const auto r = p.find("reason");
    if (a == p.end() || !a->is_number_integer() || r == p.end() || !r->is_string()) continue;
    auto& end = ends[a->get<int>()];
    if (e.id >= end.first) end = {e.id, is_provider_failure(r->get<std::string>())};
  }
  int run = 0;
  int64_t newer = INT64_MAX;  // the run's events go back in time as the attempts do
  for (int a = attempt - 1; a >= 1; --a) {
    const auto it = ends.find(a);
    if (it == ends.end() || !it->second.second || it->second.first > newer) break;
    newer = it->second.first;
    ++run;
  }
  return run;
}

}  // namespace autonous::worker
