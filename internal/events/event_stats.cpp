#include "internal/events/event_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "internal/events/event_types.h"

namespace autonous::events {
namespace {

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<size_t>(std::lround(p * static_cast<double>(sorted.size() - 1)));
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace

std::vector<EstimateStats> detail::summarize(EstimateSamples ratios) {
  std::vector<EstimateStats> out;
  for (auto& [key, r] : ratios) {
    std::sort(r.begin(), r.end());
    EstimateStats s;
    s.model = key.first;
    s.token_counter = key.second;
    s.calls = static_cast<int64_t>(r.size());
    double sum = 0;
    int64_t under = 0;
    for (const double x : r) {
      sum += x;
      under += x > 1.0 ? 1 : 0;
    }
    s.mean_ratio = sum / static_cast<double>(r.size());
    s.p50_ratio = percentile(r, 0.50);
    s.p90_ratio = percentile(r, 0.90);
    s.p99_ratio = percentile(r, 0.99);
    s.min_ratio = r.front();
    s.max_ratio = r.back();
    s.share_under = static_cast<double>(under) / static_cast<double>(r.size());
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.calls > b.calls; });
  return out;
}

detail::CompressionTally::CompressionTally() {
  for (const char* level : {"none", "normal", "aggressive", "emergency"})
    stats_.by_level[level] = 0;
}

void detail::CompressionTally::add(const std::string& level, int64_t before, int64_t after,
                                   bool overflow_rebuild) {
  ++stats_.turns;
  ++stats_.by_level[level];
  if (overflow_rebuild) ++stats_.overflow_rebuilds;
  if (level == "none" || level == "unknown") return;
  ++stats_.compressed_turns;
  if (before > 0) ratio_sum_ += static_cast<double>(after) / static_cast<double>(before);
  const int64_t saved = std::max<int64_t>(0, before - after);
  stats_.tokens_saved = saved > std::numeric_limits<int64_t>::max() - stats_.tokens_saved
                            ? std::numeric_limits<int64_t>::max()
                            : stats_.tokens_saved + saved;
}

CompressionStats detail::CompressionTally::finish() const {
  CompressionStats s = stats_;
  if (s.compressed_turns > 0) s.mean_ratio = ratio_sum_ / static_cast<double>(s.compressed_turns);
  return s;
}

nlohmann::ordered_json cost_json(const std::vector<CostStats>& costs) {
  nlohmann::ordered_json models = nlohmann::ordered_json::array();
  double usd = 0;
  int64_t calls = 0;
  int64_t priced = 0;
  for (const CostStats& c : costs) {
    usd += c.cost_usd;
    calls += c.calls;
    priced += c.priced_calls;
    models.push_back({{"model", c.model},
                      {"call", c.call},
                      {"calls", c.calls},
                      {"priced_calls", c.priced_calls},
                      {"cost_usd", c.priced_calls > 0 ? nlohmann::ordered_json(c.cost_usd)
                                                      : nlohmann::ordered_json(nullptr)},
                      {"prompt_tokens", c.prompt_tokens},
                      {"completion_tokens", c.completion_tokens},
                      {"cached_tokens", c.cached_tokens}});
  }
  nlohmann::ordered_json j;
  j["usd"] = priced > 0 ? nlohmann::ordered_json(usd) : nlohmann::ordered_json(nullptr);
  j["calls"] = calls;
  j["priced_calls"] = priced;
  j["partial"] = priced < calls;  // some calls have no figure: `usd` is a lower bound
  j["models"] = std::move(models);
  return j;
}

std::string context_stats_json(const CompressionStats& c, const std::vector<EstimateStats>& stats,
                               const std::vector<CostStats>& costs) {
  nlohmann::ordered_json j;
  j["turns"] = c.turns;
  nlohmann::ordered_json levels = nlohmann::ordered_json::object();
  for (const char* level : {"none", "normal", "aggressive", "emergency"})
    levels[level] = c.by_level.at(level);
  if (const auto it = c.by_level.find("unknown"); it != c.by_level.end())
    levels["unknown"] = it->second;
  j["compressions"] = std::move(levels);
  j["emergency"] = c.by_level.at("emergency");
  j["compressed_turns"] = c.compressed_turns;
  j["average_compression_ratio"] = c.mean_ratio;
  j["tokens_saved"] = c.tokens_saved;
  j["overflow_rebuilds"] = c.overflow_rebuilds;
  j["warnings"] = c.warnings;
  j["summaries"] = c.summaries;
  j["summary_failures"] = c.summary_failures;
  nlohmann::ordered_json models = nlohmann::ordered_json::array();
  for (const auto& s : stats) {
    models.push_back({{"model", s.model},
                      {"token_counter", s.token_counter},
                      {"calls", s.calls},
                      {"actual_over_estimate",
                       {{"mean", s.mean_ratio},
                        {"p50", s.p50_ratio},
                        {"p90", s.p90_ratio},
                        {"p99", s.p99_ratio},
                        {"min", s.min_ratio},
                        {"max", s.max_ratio}}},
                      {"share_underestimated", s.share_under}});
  }
  j["models"] = std::move(models);
  j["cost"] = cost_json(costs);
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace autonous::events
