// The task page and the chat list (dashboard.h).

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

std::string event_trail(PageDb& db, int64_t task_id, json& compressed, json& response) {
  const Rows r = db.query(
      "SELECT id, created_at, type, payload FROM events WHERE task_id = $1 ORDER BY id LIMIT 2000",
      {task_id});
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.size(); ++i) {
    const std::string& type = r.text(i, 2);
    const json p = json::parse(r.text(i, 3), nullptr, false);
    if (type == "context.compressed") compressed = p;
    // The turn's own call: a summary's or an embeddings call's response (#31) is not the prompt's.
    if (type == "llm.response" && detail::chat_call(p)) response = p;
    rows.push_back(
        {html::escape(r.text(i, 0)), html::escape(r.text(i, 1)), html::escape(type),
         detail::bounded_pre("", p.is_discarded()
                                     ? r.text(i, 3)
                                     : p.dump(1, ' ', false, json::error_handler_t::replace))});
  }
  return html::table("events", {"id", "at", "type", "payload"}, rows);
}

// The turn's tool calls and results (history's tool_calls and tool_call_id, #29), in order:
// each call's tool, id and arguments, each result's text, bounded and escaped.
std::string tool_steps(PageDb& db, int64_t task_id) {
  const Rows r = db.query(
      "SELECT id, tool_calls, tool_call_id, text FROM history WHERE task_id = $1 AND "
      "(tool_calls IS NOT NULL OR tool_call_id IS NOT NULL) ORDER BY id LIMIT 200",
      {task_id});
  if (r.empty()) return "";
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.size(); ++i) {
    const std::string id = "step-" + r.text(i, 0);
    if (!r.is_null(i, 1)) {
      const json calls = json::parse(r.text(i, 1), nullptr, false);
      if (!calls.is_array()) continue;
      for (const json& c : calls) {
        if (!c.is_object()) continue;
        const json f = c.contains("function") && c["function"].is_object() ? c["function"] : json();
        rows.push_back({"call", html::escape(f.is_object() ? detail::str(f, "name") : ""),
                        html::escape(detail::str(c, "id")),
                        detail::bounded_pre("", f.is_object() ? detail::str(f, "arguments") : "")});
      }
    } else {
      rows.push_back(
          {"result", "", html::escape(r.text(i, 2)), detail::bounded_pre(id, r.text(i, 3))});
    }
  }
  return "<h2>Tool calls</h2>" +
         html::table("tool-calls", {"step", "tool", "call id", "content"}, rows);
}

}  // namespace

std::optional<std::string> task_page(PageDb& db, int64_t task_id) {
  const Rows row = db.query("SELECT * FROM tasks WHERE id = $1", {task_id});
  if (row.empty()) return std::nullopt;
  const auto field = [&](const char* name) { return row.column(name); };
  const std::string& chat = row.text(0, field("chat_id"));
  std::string body = "<p>Chat " + html::link("/chat", "id", chat, chat) +
                     " · status <b id='status'>" + html::escape(row.text(0, field("status"))) +
                     "</b></p>";
  if (!row.is_null(0, field("reply")))
    body += "<h2>Reply</h2>" + detail::bounded_pre("reply", row.text(0, field("reply")));
  if (!row.is_null(0, field("error")))
    body += "<h2>Error</h2><div class='bad'>" +
            detail::bounded_pre("error", row.text(0, field("error"))) + "</div>";
  body += "<h2>User message</h2>" + detail::bounded_pre("text", row.text(0, field("text")));
  body += tool_steps(db, task_id);
  body +=
      "<h2>Task</h2>" + detail::row_table("task", row, {"text", "reply", "error", "lease_token"});
  json compressed;
  json response;
  const std::string trail = event_trail(db, task_id, compressed, response);
  body += "<h2>Prompt (last attempt)</h2>" + prompt_figures(compressed, response);
  body += "<h2>Event trail</h2>" + trail;
  return html::page("Task " + std::to_string(task_id), body);
}

std::string chats_page(PageDb& db, const std::string& search) {
  std::string body = "<form method='get' action='/chat'><label>Chat id <input name='id' value='" +
                     html::escape(search) + "'></label> <button>Open</button></form>";
  // The newest 5 000 tasks' chats, newest first: bounded on any database.
  const Rows r = db.query(
      "SELECT chat_id, count(*), max(id), count(*) FILTER (WHERE status = 'failed'), "
      "count(*) FILTER (WHERE status IN ('queued', 'running')) FROM (SELECT chat_id, id, status "
      "FROM tasks ORDER BY id DESC LIMIT 5000) recent GROUP BY chat_id ORDER BY max(id) DESC "
      "LIMIT 200");
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < r.size(); ++i) {
    const std::string& chat = r.text(i, 0);
    const std::string& last = r.text(i, 2);
    rows.push_back({html::link("/chat", "id", chat, chat), html::escape(r.text(i, 1)),
                    html::link("/task", "id", last, last), html::escape(r.text(i, 3)),
                    html::escape(r.text(i, 4))});
  }
  body += "<h2>Chats with recent tasks (newest 5 000 tasks)</h2>" +
          html::table("chats", {"chat", "tasks", "last task", "failed", "open"}, rows);
  return html::page("Chats", body);
}

}  // namespace autonous::ops
