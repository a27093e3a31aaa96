// The overview's model table (dashboard.h): calls, tokens, cached share and latency by model,
// from the newest llm.request / llm.response events.

#include <map>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/ops/dashboard.h"
#include "internal/ops/dashboard_support.h"
#include "internal/ops/html.h"

namespace autonous::ops {

std::string models_table(SQLite::Database& db) {
  // The model asked for is the llm.request's; the response names what the server ran.
  // SQLite extracts the four fields: cheaper than parsing whole payloads here.
  // The model asked for: the attempt's llm.request before the response (through events_by_task),
  // as /metrics labels it; a server answers with its own name (e.g. a dated one).
  SQLite::Statement q(
      db,
      "SELECT coalesce((SELECT json_extract(r.payload, '$.model') FROM events r WHERE r.task_id = "
      "e.task_id AND r.type = 'llm.request' AND r.id < e.id ORDER BY r.id DESC LIMIT 1), "
      "json_extract(e.payload, '$.model')), json_extract(e.payload, '$.latency_ms'), "
      "json_extract(e.payload, '$.usage.prompt_tokens'), "
      "json_extract(e.payload, '$.usage.completion_tokens'), "
      "json_extract(e.payload, '$.usage.cached_tokens') FROM events e "
      "WHERE e.type = 'llm.response' ORDER BY e.id DESC LIMIT 1000");
  struct Model {
    int64_t calls = 0;
    double prompt = 0, completion = 0, cached = 0;
    std::vector<double> latency;
  };
  std::map<std::string, Model> by_model;
  while (q.executeStep()) {
    Model& m = by_model[q.getColumn(0).isText() ? q.getColumn(0).getString() : ""];
    ++m.calls;
    m.latency.push_back(q.getColumn(1).getDouble() / 1000.0);
    m.prompt += q.getColumn(2).getDouble();
    m.completion += q.getColumn(3).getDouble();
    m.cached += q.getColumn(4).getDouble();
  }
  std::vector<std::vector<std::string>> rows;
  for (auto& [name, m] : by_model)
    rows.push_back({html::escape(name), html::number(static_cast<double>(m.calls)),
                    html::number(m.prompt), html::number(m.completion), html::number(m.cached),
                    m.prompt > 0 ? html::percent(m.cached / m.prompt) : "-",
                    html::number(detail::percentile(m.latency, 0.5)),
                    html::number(detail::percentile(m.latency, 0.95)),
                    html::number(detail::percentile(m.latency, 0.99))});
  return html::table("models",
                     {"model", "calls", "prompt tokens", "completion tokens", "cached tokens",
                      "cached share", "p50 s", "p95 s", "p99 s"},
                     rows);
}

}  // namespace autonous::ops
