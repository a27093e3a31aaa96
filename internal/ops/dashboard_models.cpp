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
  SQLite::Statement q(db,
                      "SELECT payload FROM events WHERE type = 'llm.response' "
                      "ORDER BY id DESC LIMIT 5000");
  struct Model {
    int64_t calls = 0;
    double prompt = 0, completion = 0, cached = 0;
    std::vector<double> latency;
  };
  std::map<std::string, Model> by_model;
  while (q.executeStep()) {
    const nlohmann::json p = nlohmann::json::parse(q.getColumn(0).getString(), nullptr, false);
    Model& m = by_model[detail::str(p, "model")];
    ++m.calls;
    m.latency.push_back(detail::num(p, "latency_ms") / 1000.0);
    const auto usage = p.is_object() ? p.find("usage") : p.end();
    if (usage == p.end() || !usage->is_object()) continue;
    m.prompt += detail::num(*usage, "prompt_tokens");
    m.completion += detail::num(*usage, "completion_tokens");
    m.cached += detail::num(*usage, "cached_tokens");
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
