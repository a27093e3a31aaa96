// event_stats.h on PostgreSQL: the same rows as the SQLite queries, read with jsonb's operators
// (a field that is not a number counts as absent, as json_extract's NULL does), summed by the
// shared detail:: functions.

#include "internal/events/event_stats.h"

#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/events.h"
#include "internal/events/event_types.h"

namespace autonous::events {
namespace {

using db::pg::param;

// The number at `path` (jsonb path text, e.g. '{usage,prompt_tokens}') of `payload`, truncated,
// within [0, kMaxFigureSql], else NULL (as event_stats.cpp's figure_at on SQLite).
std::string number_at(const std::string& payload, const std::string& path) {
  return "CASE WHEN jsonb_typeof(" + payload + " #> '" + path +
         "') = 'number' THEN least(greatest(trunc((" + payload + " #> '" + path +
         "')::numeric), 0), " + detail::kMaxFigureSql + ") END";
}

// " AND <alias>chat_id = $n …" for the filter, appending its parameters.
std::string filter_sql(const StatsFilter& filter, const std::string& alias,
                       std::vector<db::pg::Param>& params) {
  std::string where;
  if (filter.chat_id) {
    params.push_back(param(*filter.chat_id));
    where += " AND " + alias + "chat_id = $" + std::to_string(params.size());
  }
  if (filter.since) {
    params.push_back(param(*filter.since));
    where += " AND " + alias + "created_at >= $" + std::to_string(params.size());
  }
  return where;
}

}  // namespace

std::vector<EstimateStats> estimate_stats(db::pg::Connection& c, const StatsFilter& filter) {
  std::vector<db::pg::Param> params = {param(std::string(kLlmRequest)),
                                       param(std::string(kLlmResponse))};
  const std::string estimated = number_at("r.payload", "{estimated_tokens}");
  const std::string actual = number_at("r.payload", "{usage,prompt_tokens}");
  const std::string sql =
      "SELECT coalesce(q.payload ->> 'model', ''), coalesce(q.payload ->> 'token_counter', "
      "'unknown'), " +
      estimated + "::double precision, " + actual +
      "::double precision FROM events r JOIN events q ON q.parent_id = r.parent_id AND q.type = "
      "$1 WHERE r.type = $2 AND " +
      actual + " > 0 AND " + estimated + " > 0" + filter_sql(filter, "r.", params);
  const db::pg::Result r = c.query(sql, params);
  detail::EstimateSamples ratios;
  for (int i = 0; i < r.rows(); ++i)
    ratios[{r.text(i, 0), r.text(i, 1)}].push_back(r.real(i, 3) / r.real(i, 2));
  return detail::summarize(std::move(ratios));
}

std::vector<CostStats> cost_stats(db::pg::Connection& c, const StatsFilter& filter) {
  std::vector<db::pg::Param> params = {param(std::string(kLlmResponse))};
  const std::string cost =
      "CASE WHEN jsonb_typeof(payload -> 'cost_usd') = 'number' AND (payload ->> "
      "'cost_usd')::double precision >= 0 THEN (payload ->> 'cost_usd')::double precision END";
  const auto sum_of = [](const std::string& figure) {
    return "coalesce(sum(" + figure + "), 0)::bigint";
  };
  const std::string sql =
      "SELECT coalesce(payload ->> 'model', ''), coalesce(payload ->> 'call', 'chat'), "
      "count(*), count(" +
      cost + "), coalesce(sum(" + cost + "), 0), " +
      sum_of(number_at("payload", "{usage,prompt_tokens}")) + ", " +
      sum_of(number_at("payload", "{usage,completion_tokens}")) + ", " +
      sum_of(number_at("payload", "{usage,cached_tokens}")) + " FROM events WHERE type = $1" +
      filter_sql(filter, "", params) +
      // A chat's calls through its tasks (tasks_by_chat, events_by_task), as on SQLite.
      (filter.chat_id ? " AND task_id IN (SELECT id FROM tasks WHERE chat_id = $2)" : "") +
      " GROUP BY 1, 2 ORDER BY 5 DESC, 3 DESC, 1, 2";
  const db::pg::Result r = c.query(sql, params);
  std::vector<CostStats> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back({r.text(i, 0), r.text(i, 1), r.int64(i, 2), r.int64(i, 3), r.real(i, 4),
                   r.int64(i, 5), r.int64(i, 6), r.int64(i, 7)});
  return out;
}

CompressionStats compression_stats(db::pg::Connection& c, const StatsFilter& filter) {
  std::vector<db::pg::Param> params = {param(std::string(kContextCompressed))};
  const std::string sql =
      "SELECT coalesce(payload ->> 'level', 'unknown'), coalesce(trunc(" +
      number_at("payload", "{tokens_before}") + "), 0)::bigint, coalesce(trunc(" +
      number_at("payload", "{tokens_after}") +
      "), 0)::bigint, CASE jsonb_typeof(payload -> 'after_overflow') WHEN 'boolean' THEN "
      "payload ->> 'after_overflow' = 'true' WHEN 'number' THEN trunc((payload -> "
      "'after_overflow')::numeric) <> 0 ELSE false END FROM events WHERE type = $1" +
      filter_sql(filter, "", params) + " ORDER BY id";
  const db::pg::Result r = c.query(sql, params);
  detail::CompressionTally tally;
  for (int i = 0; i < r.rows(); ++i)
    tally.add(r.text(i, 0), r.int64(i, 1), r.int64(i, 2), r.text(i, 3) == "t");
  CompressionStats s = tally.finish();
  std::vector<db::pg::Param> counted = {param(std::string(kContextWarning)),
                                        param(std::string(kContextSummarized)),
                                        param(std::string(kContextSummaryFailed))};
  const db::pg::Result w = c.query(
      "SELECT count(*) FILTER (WHERE type = $1), count(*) FILTER (WHERE type = $2), "
      "count(*) FILTER (WHERE type = $3) FROM events WHERE type IN ($1, $2, $3)" +
          filter_sql(filter, "", counted),
      counted);
  s.warnings = w.int64(0, 0);
  s.summaries = w.int64(0, 1);
  s.summary_failures = w.int64(0, 2);
  return s;
}

}  // namespace autonous::events
