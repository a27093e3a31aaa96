#include "internal/events/event_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <nlohmann/json.hpp>

#include "internal/events/event_types.h"

namespace autonous::events {
namespace {

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<size_t>(std::lround(p * static_cast<double>(sorted.size() - 1)));
  return sorted[std::min(i, sorted.size() - 1)];
}

// The JSON number at `path` of `payload`, truncated, within [0, kMaxFigureSql], else NULL.
std::string figure_at(const std::string& payload, const std::string& path) {
  const std::string at = "(" + payload + ", '" + path + "')";
  return "(CASE WHEN json_type" + at + " IN ('integer', 'real') THEN min(max(CAST(json_extract" +
         at + " AS INTEGER), 0), " + detail::kMaxFigureSql + ") END)";
}

// 1 when the flag at `path` is true or a number whose whole part is not 0, else 0 (a string
// such as "1" is not a flag, as on PostgreSQL).
std::string flag_at(const std::string& payload, const std::string& path) {
  const std::string at = "(" + payload + ", '" + path + "')";
  return "(CASE json_type" + at + " WHEN 'true' THEN 1 WHEN 'integer' THEN CAST(json_extract" + at +
         " AS INTEGER) <> 0 WHEN 'real' THEN CAST(json_extract" + at +
         " AS INTEGER) <> 0 ELSE 0 END)";
}

}  // namespace

std::vector<EstimateStats> estimate_stats(SQLite::Database& db, const StatsFilter& filter) {
  // Each response pairs with the request of the same turn (same parent agent.started event).
  std::string sql =
      "SELECT json_extract(q.payload, '$.model'), "
      "       coalesce(json_extract(q.payload, '$.token_counter'), 'unknown'), "
      "       " +
      figure_at("r.payload", "$.estimated_tokens") + ", " +
      figure_at("r.payload", "$.usage.prompt_tokens") +
      " FROM events r JOIN events q ON q.parent_id = r.parent_id AND q.type = :request "
      "WHERE r.type = :response AND " +
      figure_at("r.payload", "$.usage.prompt_tokens") + " > 0 AND " +
      figure_at("r.payload", "$.estimated_tokens") + " > 0";
  if (filter.chat_id) sql += " AND r.chat_id = :chat";
  if (filter.since) sql += " AND r.created_at >= :since";
  SQLite::Statement q(db, sql);
  q.bind(":request", std::string(kLlmRequest));
  q.bind(":response", std::string(kLlmResponse));
  if (filter.chat_id) q.bind(":chat", *filter.chat_id);
  if (filter.since) q.bind(":since", *filter.since);
  detail::EstimateSamples ratios;
  while (q.executeStep()) {
    const double estimated = q.getColumn(2).getDouble();
    const double actual = q.getColumn(3).getDouble();
    ratios[{q.getColumn(0).getString(), q.getColumn(1).getString()}].push_back(actual / estimated);
  }
  return detail::summarize(std::move(ratios));
}

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

CompressionStats compression_stats(SQLite::Database& db, const StatsFilter& filter) {
  std::string where;
  if (filter.chat_id) where += " AND chat_id = :chat";
  if (filter.since) where += " AND created_at >= :since";
  SQLite::Statement q(
      db,
      "SELECT coalesce(json_extract(payload, '$.level'), 'unknown'), "
      "       " +
          figure_at("payload", "$.tokens_before") + ", " + figure_at("payload", "$.tokens_after") +
          ", "
          "       " +
          flag_at("payload", "$.after_overflow") + "FROM events WHERE type = :compressed" + where);
  q.bind(":compressed", std::string(kContextCompressed));
  if (filter.chat_id) q.bind(":chat", *filter.chat_id);
  if (filter.since) q.bind(":since", *filter.since);
  detail::CompressionTally tally;
  while (q.executeStep())
    tally.add(q.getColumn(0).getString(), q.getColumn(1).getInt64(), q.getColumn(2).getInt64(),
              q.getColumn(3).getInt() != 0);
  CompressionStats s = tally.finish();
  SQLite::Statement w(db,
                      "SELECT coalesce(sum(type = :warning), 0), "
                      "coalesce(sum(type = :summarized), 0), "
                      "coalesce(sum(type = :failed), 0) FROM events "
                      "WHERE type IN (:warning, :summarized, :failed)" +
                          where);
  w.bind(":warning", std::string(kContextWarning));
  w.bind(":summarized", std::string(kContextSummarized));
  w.bind(":failed", std::string(kContextSummaryFailed));
  if (filter.chat_id) w.bind(":chat", *filter.chat_id);
  if (filter.since) w.bind(":since", *filter.since);
  if (w.executeStep()) {
    s.warnings = w.getColumn(0).getInt64();
    s.summaries = w.getColumn(1).getInt64();
    s.summary_failures = w.getColumn(2).getInt64();
  }
  return s;
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

std::string context_stats_json(const CompressionStats& c, const std::vector<EstimateStats>& stats) {
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
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace autonous::events
