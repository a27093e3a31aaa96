// The overview page (dashboard.h): the queue now and over time, failures, retries, models.

#include <ctime>
#include <map>

#include <fmt/format.h>

#include "internal/ops/dashboard.h"
#include "internal/ops/dashboard_support.h"
#include "internal/ops/html.h"

namespace autonous::ops {
namespace {

using detail::num;
using detail::percentile;
using nlohmann::json;

constexpr int kRecentTasks = 20000;  // the over-time plot reads at most the newest this many
constexpr int kRecentCalls = 1000;   // model and retry tables: the newest this many events
constexpr int kBuckets = 60;

std::string card(const std::string& label, const std::string& value, const std::string& id) {
  return fmt::format("<div class='card' id='{}'>{}<b>{}</b></div>", html::escape(id),
                     html::escape(label), html::escape(value));
}

std::string status_cards(PageDb& db, TaskCounts& counts) {
  std::string out = "<div class='cards'>";
  const StatusCounts n = counts.read(db);
  for (size_t i = 0; i < kStatuses.size(); ++i)
    out += card(kStatuses[i], html::number(static_cast<double>(n[i])),
                std::string("count-") + kStatuses[i]);
  const std::optional<double> age = oldest_queued_age(db);
  out += card("oldest queued", age ? html::number(*age) + " s" : "-", "oldest-queued");
  return out + "</div>";
}

struct TaskTimes {
  double created = 0;   // Unix seconds
  double finished = 0;  // 0 while open
  std::string status;
};

std::vector<TaskTimes> recent_tasks(PageDb& db, double now) {
  const Rows r = db.query(
      "SELECT created_at, finished_at, status FROM tasks WHERE id > (SELECT coalesce(max(id), 0) "
      "FROM tasks) - $1 AND created_at >= $2",
      {int64_t{kRecentTasks}, iso_time(now - 86400)});
  std::vector<TaskTimes> out;
  out.reserve(r.size());
  for (size_t i = 0; i < r.size(); ++i)
    out.push_back({unix_seconds(r.text(i, 0)).value_or(0), unix_seconds(r.text(i, 1)).value_or(0),
                   r.text(i, 2)});
  return out;
}

// Arrivals, completions and failures per bucket, and the tasks open at each bucket's end.
std::string over_time(const std::vector<TaskTimes>& tasks, double now) {
  if (tasks.empty()) return "<p class='muted'>No task in the last 24 hours.</p>";
  double start = now - kBuckets;  // at least a minute, so the axis ends now
  for (const TaskTimes& t : tasks) start = std::min(start, t.created);
  const double width = std::max(1.0, (now - start) / kBuckets);
  std::vector<double> arrived(kBuckets + 1), done(kBuckets + 1), failed(kBuckets + 1),
      open(kBuckets + 1);
  auto bucket = [&](double t) {
    return std::min<size_t>(kBuckets, static_cast<size_t>(std::max(0.0, (t - start) / width)));
  };
  for (const TaskTimes& t : tasks) {
    ++arrived[bucket(t.created)];
    if (t.finished > 0 && t.status != "cancelled")
      ++(t.status == "failed" ? failed : done)[bucket(t.finished)];
    for (size_t b = bucket(t.created); b <= kBuckets; ++b)
      if (t.finished <= 0 || start + width * static_cast<double>(b + 1) < t.finished) ++open[b];
  }
  html::Chart c{"tasks-over-time",
                "Tasks per " + html::number(width) + " s, and open (queued or running) at the time",
                "seconds (0 = now)",
                "tasks",
                {},
                {},
                0};
  html::Series series[4] = {{"arrived", "#98a2b3", {}},
                            {"done", "#2e90fa", {}},
                            {"failed", "#d92d20", {}},
                            {"open", "#f79009", {}, true}};
  for (size_t b = 0; b <= kBuckets; ++b) {
    const double x = -(now - (start + width * static_cast<double>(b)));
    series[0].points.emplace_back(x, arrived[b]);
    series[1].points.emplace_back(x, done[b]);
    series[2].points.emplace_back(x, failed[b]);
    series[3].points.emplace_back(x, open[b]);
  }
  c.series.assign(std::begin(series), std::end(series));
  return html::line_chart(c);
}

std::string throughput(const std::vector<TaskTimes>& tasks, double now) {
  std::vector<double> latency;
  int64_t last_minute = 0;
  int64_t last_hour = 0;
  for (const TaskTimes& t : tasks) {
    if (t.status != "done" || t.finished <= 0) continue;
    latency.push_back(t.finished - t.created);
    if (now - t.finished <= 60) ++last_minute;
    if (now - t.finished <= 3600) ++last_hour;
  }
  const size_t n = latency.size();
  std::vector<std::vector<std::string>> rows = {
      {"done in the last minute (of these tasks)", html::number(static_cast<double>(last_minute))},
      {"done in the last hour (of these tasks)", html::number(static_cast<double>(last_hour))},
      {"queue to reply p50 (s)", html::number(percentile(latency, 0.50))},
      {"queue to reply p95 (s)", html::number(percentile(latency, 0.95))},
      {"queue to reply p99 (s)", html::number(percentile(latency, 0.99))},
      {"tasks measured", html::number(static_cast<double>(n))}};
  return html::table("throughput", {"figure", "value"}, rows);
}

std::string failures(PageDb& db) {
  const Rows r = db.query(
      "SELECT id, chat_id, coalesce(finished_at, updated_at), attempts, error FROM tasks "
      "WHERE status = 'failed' ORDER BY id DESC LIMIT 20");
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.size(); ++i) {
    const std::string& id = r.text(i, 0);
    rows.push_back({html::link("/task", "id", id, id),
                    html::link("/chat", "id", r.text(i, 1), r.text(i, 1)),
                    html::escape(r.text(i, 2)), html::escape(r.text(i, 3)),
                    "<pre>" + html::escape(detail::snippet(r.text(i, 4), 400)) + "</pre>"});
  }
  return html::table("failures", {"task", "chat", "failed at", "attempts", "error"}, rows);
}

// The newest kRecentCalls events of `type` (llm.retry, context.warning) counted by reason, with
// the newest one's time and text (`text_key`: its error or message).
std::string reasons(PageDb& db, const char* type, const char* id, const char* counted,
                    const char* text_key) {
  const Rows r =
      db.query("SELECT payload, created_at FROM events WHERE type = $2 ORDER BY id DESC LIMIT $1",
               {int64_t{kRecentCalls}, std::string(type)});
  struct Reason {
    int64_t count = 0;
    std::string last_at;
    std::string example;
  };
  std::map<std::string, Reason> by_reason;
  for (size_t i = 0; i < r.size(); ++i) {
    const json p = json::parse(r.text(i, 0), nullptr, false);
    Reason& reason = by_reason[detail::str(p, "reason")];
    if (reason.count++ == 0) {
      reason.last_at = r.text(i, 1);
      reason.example = detail::str(p, text_key);
    }
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, reason] : by_reason)
    rows.push_back({html::escape(name), html::number(static_cast<double>(reason.count)),
                    html::escape(reason.last_at),
                    html::escape(detail::snippet(reason.example, 200))});
  return html::table(id, {"reason", counted, "newest at", std::string("newest ") + text_key}, rows);
}

}  // namespace

std::string models_table(PageDb& db);  // dashboard_models.cpp

std::string overview_page(PageDb& db, TaskCounts& counts) {
  const double now = db.now();  // the clock that wrote the stored times
  const std::vector<TaskTimes> tasks = recent_tasks(db, now);
  std::string body = status_cards(db, counts);
  body += "<h2>Over time (last 24 hours, newest " + html::number(kRecentTasks) + " tasks)</h2>";
  body += over_time(tasks, now);
  body += "<h2>Throughput and latency (the same tasks)</h2>" + throughput(tasks, now);
  body += "<h2>Models (newest " + html::number(kRecentCalls) + " calls)</h2>" + models_table(db);
  const std::string newest = html::number(kRecentCalls);
  body += "<h2>Retry reasons (newest " + newest + " retries)</h2>" +
          reasons(db, "llm.retry", "retries", "retries", "error");
  // server_truncated (a provider cutting prompts silently), gatherer_failed, pins_left_out, …
  body += "<h2>Context warnings (newest " + newest + " warnings)</h2>" +
          reasons(db, "context.warning", "warnings", "warnings", "message");
  body += "<h2>Failures (newest 20)</h2>" + failures(db);
  return html::page("Overview", body);
}

}  // namespace autonous::ops
