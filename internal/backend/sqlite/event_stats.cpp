// The event statistics on SQLite (events/event_stats.h says what they are).
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/backend/sqlite/events.h"
#include "internal/events/event_types.h"

namespace autonous::events {
namespace {

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

std::vector<CostStats> cost_stats(SQLite::Database& db, const StatsFilter& filter) {
  // A cost is read only when it is a JSON number of 0 or more (as on PostgreSQL).
  const std::string cost =
      "(CASE WHEN json_type(payload, '$.cost_usd') IN ('integer', 'real') AND "
      "json_extract(payload, '$.cost_usd') >= 0 THEN json_extract(payload, '$.cost_usd') END)";
  std::string sql =
      "SELECT coalesce(json_extract(payload, '$.model'), ''), "
      "coalesce(json_extract(payload, '$.call'), 'chat'), count(*), count(" +
      cost + "), coalesce(sum(" + cost + "), 0), coalesce(sum(" +
      figure_at("payload", "$.usage.prompt_tokens") + "), 0), coalesce(sum(" +
      figure_at("payload", "$.usage.completion_tokens") + "), 0), coalesce(sum(" +
      figure_at("payload", "$.usage.cached_tokens") + "), 0) FROM events WHERE type = :response";
  // A chat's calls through its tasks (tasks_by_chat, events_by_task): events have no index by
  // chat, and `chat show` must not read every call of every chat.
  if (filter.chat_id)
    sql += " AND task_id IN (SELECT id FROM tasks WHERE chat_id = :chat) AND chat_id = :chat";
  if (filter.since) sql += " AND created_at >= :since";
  sql += " GROUP BY 1, 2 ORDER BY 5 DESC, 3 DESC, 1, 2";
  SQLite::Statement q(db, sql);
  q.bind(":response", std::string(kLlmResponse));
  if (filter.chat_id) q.bind(":chat", *filter.chat_id);
  if (filter.since) q.bind(":since", *filter.since);
  std::vector<CostStats> out;
  while (q.executeStep())
    out.push_back({q.getColumn(0).getString(), q.getColumn(1).getString(),
                   q.getColumn(2).getInt64(), q.getColumn(3).getInt64(), q.getColumn(4).getDouble(),
                   q.getColumn(5).getInt64(), q.getColumn(6).getInt64(),
                   q.getColumn(7).getInt64()});
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

}  // namespace autonous::events
