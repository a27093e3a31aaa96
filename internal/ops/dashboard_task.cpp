// The task page and the chat list (dashboard.h).

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <fmt/format.h>

#include "internal/ops/dashboard.h"
#include "internal/ops/dashboard_support.h"
#include "internal/ops/html.h"

namespace autonous::ops {
namespace {

using nlohmann::json;

// The figures of the prompt actually sent: the last context.compressed and llm.response.
std::string prompt_figures(const json& compressed, const json& response) {
  std::vector<std::vector<std::string>> rows;
  for (const char* key : {"level", "strategy", "tokens_before", "tokens_after", "estimated_tokens",
                          "budget_tokens", "system_tokens", "user_tokens", "original_count",
                          "compressed_count", "dropped_count", "truncated_count", "summary_used",
                          "summary_tokens", "evidence_tokens", "token_counter", "build_us"})
    if (compressed.is_object() && compressed.contains(key))
      rows.push_back({html::escape(key), html::escape(detail::str(compressed, key))});
  const auto usage = response.is_object() ? response.find("usage") : response.end();
  if (usage != response.end() && usage->is_object())
    for (const char* key : {"prompt_tokens", "completion_tokens", "cached_tokens"})
      rows.push_back(
          {html::escape(std::string("API ") + key), html::escape(detail::str(*usage, key))});
  std::string out = html::table("prompt-figures", {"figure", "value"}, rows);
  const auto blocks = compressed.is_object() ? compressed.find("blocks") : compressed.end();
  if (blocks != compressed.end() && blocks->is_array()) {
    std::vector<std::vector<std::string>> b;
    for (const json& block : *blocks)
      b.push_back(
          {html::escape(detail::str(block, "name")), html::escape(detail::str(block, "tier")),
           html::number(detail::num(block, "tokens")), html::number(detail::num(block, "count")),
           html::escape(detail::str(block, "stable"))});
    out += "<h2>Prompt blocks</h2>" +
           html::table("prompt-blocks", {"block", "tier", "tokens", "items", "stable"}, b);
  }
  return out;
}

std::string event_trail(SQLite::Database& db, int64_t task_id, json& compressed, json& response) {
  SQLite::Statement q(db,
                      "SELECT id, created_at, type, payload FROM events WHERE task_id = ? "
                      "ORDER BY id LIMIT 2000");
  q.bind(1, task_id);
  std::vector<std::vector<std::string>> rows;
  while (q.executeStep()) {
    const std::string type = q.getColumn(2).getString();
    const json p = json::parse(q.getColumn(3).getString(), nullptr, false);
    if (type == "context.compressed") compressed = p;
    if (type == "llm.response") response = p;
    rows.push_back({q.getColumn(0).getString(), html::escape(q.getColumn(1).getString()),
                    html::escape(type),
                    "<pre>" +
                        html::escape(p.is_discarded()
                                         ? q.getColumn(3).getString()
                                         : p.dump(1, ' ', false, json::error_handler_t::replace)) +
                        "</pre>"});
  }
  return html::table("events", {"id", "at", "type", "payload"}, rows);
}

}  // namespace

std::optional<std::string> task_page(SQLite::Database& db, int64_t task_id) {
  SQLite::Statement row(db, "SELECT * FROM tasks WHERE id = ?");
  row.bind(1, task_id);
  if (!row.executeStep()) return std::nullopt;
  const std::string chat = row.getColumn("chat_id").getString();
  const std::string status = row.getColumn("status").getString();
  std::string body = "<p>Chat " + html::link("/chat", "id", chat, chat) +
                     " · status <b id='status'>" + html::escape(status) + "</b></p>";
  if (!row.getColumn("reply").isNull())
    body += "<h2>Reply</h2><pre id='reply'>" + html::escape(row.getColumn("reply").getString()) +
            "</pre>";
  if (!row.getColumn("error").isNull())
    body += "<h2>Error</h2><pre id='error' class='bad'>" +
            html::escape(row.getColumn("error").getString()) + "</pre>";
  body += "<h2>User message</h2><pre id='text'>" + html::escape(row.getColumn("text").getString()) +
          "</pre>";
  body +=
      "<h2>Task</h2>" + detail::row_table("task", row, {"text", "reply", "error", "lease_token"});
  json compressed;
  json response;
  const std::string trail = event_trail(db, task_id, compressed, response);
  body += "<h2>Prompt (last attempt)</h2>" + prompt_figures(compressed, response);
  body += "<h2>Event trail</h2>" + trail;
  return html::page("Task " + std::to_string(task_id), body);
}

std::string chats_page(SQLite::Database& db, const std::string& search) {
  std::string body = "<form method='get' action='/chat'><label>Chat id <input name='id' value='" +
                     html::escape(search) + "'></label> <button>Open</button></form>";
  // The newest 5 000 tasks' chats, newest first: bounded on any database.
  SQLite::Statement q(db,
                      "SELECT chat_id, count(*), max(id), sum(status = 'failed'), "
                      "sum(status IN ('queued', 'running')) FROM (SELECT chat_id, id, status "
                      "FROM tasks ORDER BY id DESC LIMIT 5000) GROUP BY chat_id "
                      "ORDER BY max(id) DESC LIMIT 200");
  std::vector<std::vector<std::string>> rows;
  while (q.executeStep()) {
    const std::string chat = q.getColumn(0).getString();
    const std::string last = q.getColumn(2).getString();
    rows.push_back({html::link("/chat", "id", chat, chat), q.getColumn(1).getString(),
                    html::link("/task", "id", last, last), q.getColumn(3).getString(),
                    q.getColumn(4).getString()});
  }
  body += "<h2>Chats with recent tasks (newest 5 000 tasks)</h2>" +
          html::table("chats", {"chat", "tasks", "last task", "failed", "open"}, rows);
  return html::page("Chats", body);
}

}  // namespace autonous::ops
