// The overview's model table (dashboard.h): calls, tokens, cached share, cost and latency by
// model, from the newest llm.request / llm.response events.

#include <map>

#include "internal/ops/dashboard.h"
#include "internal/ops/dashboard_support.h"
#include "internal/ops/html.h"

namespace autonous::ops {

std::string models_table(PageDb& db) {
  // The database extracts the five fields: cheaper than parsing whole payloads here.
  // The model asked for: the attempt's llm.request before the response (through events_by_task),
  // as /metrics labels it; a server answers with its own name (e.g. a dated one).
  // A summary's or an embeddings call (#31: "call") is its own model's, as it names it; a
  // summary's latency is context.summarized's (none here).
  const Rows r = db.query(
      "SELECT CASE WHEN coalesce(e.payload ->> 'call', 'chat') = 'chat' THEN "
      "coalesce((SELECT q.payload ->> 'model' FROM events q WHERE q.task_id = e.task_id "
      "AND q.type = 'llm.request' AND q.id < e.id ORDER BY q.id DESC LIMIT 1), "
      "e.payload ->> 'model') ELSE e.payload ->> 'model' END, e.payload ->> 'latency_ms', "
      "e.payload -> 'usage' ->> 'prompt_tokens', e.payload -> 'usage' ->> 'completion_tokens', "
      "e.payload -> 'usage' ->> 'cached_tokens', e.payload ->> 'cost_usd', "
      "e.payload ->> 'call' FROM events e "
      "WHERE e.type = 'llm.response' ORDER BY e.id DESC LIMIT 1000");
  struct Model {
    int64_t calls = 0;
    int64_t priced = 0;  // calls with a cost figure
    double prompt = 0, completion = 0, cached = 0, cost = 0;
    std::vector<double> latency;
  };
  std::map<std::string, Model> by_model;
  for (size_t i = 0; i < r.size(); ++i) {
    // A summary's and an embeddings call's row apart from the turns' own (same model or not).
    const std::string& call = r.text(i, 6);
    Model& m = by_model[r.text(i, 0) + (call.empty() || call == "chat" ? "" : " (" + call + ")")];
    ++m.calls;
    if (!r.is_null(i, 1)) m.latency.push_back(r.real(i, 1) / 1000.0);
    m.prompt += r.real(i, 2);
    m.completion += r.real(i, 3);
    m.cached += r.real(i, 4);
    if (!r.is_null(i, 5)) {
      ++m.priced;
      m.cost += r.real(i, 5);
    }
  }
  std::vector<std::vector<std::string>> rows;
  for (auto& [name, m] : by_model)
    rows.push_back(
        {html::escape(name), html::number(static_cast<double>(m.calls)), html::number(m.prompt),
         html::number(m.completion), html::number(m.cached),
         m.prompt > 0 ? html::percent(m.cached / m.prompt) : "-",
         m.priced > 0 ? html::usd(m.cost) +
                            (m.priced < m.calls ? " (" + std::to_string(m.priced) + " priced)" : "")
                      : "-",
         html::number(detail::percentile(m.latency, 0.5)),
         html::number(detail::percentile(m.latency, 0.95)),
         html::number(detail::percentile(m.latency, 0.99))});
  return html::table("models",
                     {"model", "calls", "prompt tokens", "completion tokens", "cached tokens",
                      "cached share", "cost USD", "p50 s", "p95 s", "p99 s"},
                     rows);
}

}  // namespace autonous::ops
