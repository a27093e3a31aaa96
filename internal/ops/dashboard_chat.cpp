// The chat page (dashboard.h): what the context engine decided on each turn of one chat.

#include <map>
#include <set>

#include <fmt/format.h>

#include "internal/engine/policy.h"
#include "internal/ops/dashboard.h"
#include "internal/ops/dashboard_support.h"
#include "internal/ops/html.h"

namespace autonous::ops {
namespace {

using detail::num;
using detail::str;
using nlohmann::json;

constexpr int kTurns = 200;  // the newest turns drawn

struct Turn {
  int64_t task_id = 0;
  json compressed;  // the attempt that answered
  json response;    // llm.response
  bool summarized = false;
  std::map<std::string, int> warnings;  // context.warning by reason
};

// The newest kTurns answered turns of the chat, oldest first (through history's task ids).
std::vector<Turn> turns_of(PageDb& db, const std::string& chat) {
  // `type || ''`: through events_by_task, not an index on type.
  const Rows r = db.query(
      "SELECT task_id, type, payload FROM events WHERE task_id IN (SELECT task_id FROM history "
      "WHERE chat_id = $1 AND task_id IS NOT NULL AND role = 'assistant' ORDER BY id DESC "
      "LIMIT $2) AND type || '' IN ('context.compressed', 'llm.response', 'context.summarized', "
      "'context.warning') "
      "ORDER BY task_id, id",
      {chat, int64_t{kTurns}});
  std::vector<Turn> out;
  for (size_t i = 0; i < r.size(); ++i) {
    const int64_t task = r.int64(i, 0);
    if (out.empty() || out.back().task_id != task) out.push_back({task, {}, {}, false, {}});
    const std::string& type = r.text(i, 1);
    json p = json::parse(r.text(i, 2), nullptr, false);
    if (type == "context.compressed")
      out.back().compressed = std::move(p);
    else if (type == "llm.response") {
      // The turn's own call (a summary's or an embeddings call's response is not, #31).
      if (detail::chat_call(p)) out.back().response = std::move(p);
    } else if (type == "context.warning") {
      ++out.back().warnings[str(p, "reason")];
    } else {
      out.back().summarized = true;
    }
  }
  return out;
}

engine::Thresholds thresholds_of(PageDb& db, const std::string& chat,
                                 const engine::ContextSettings& settings) {
  const Rows r = db.query("SELECT settings FROM chat_settings WHERE chat_id = $1", {chat});
  try {
    if (!r.empty())
      return engine::effective_policy(settings, engine::parse_overrides(r.text(0, 0))).thresholds;
  } catch (const std::exception&) {  // stored settings the worker ignores too
  }
  return settings.policy.thresholds;
}

const char* level_color(const std::string& level) {
  if (level == "normal") return "#fdb022";
  if (level == "aggressive") return "#f79009";
  if (level == "emergency") return "#d92d20";
  return "#2e90fa";
}

size_t recalled(const json& compressed) {
  const auto r = compressed.is_object() ? compressed.find("recall") : compressed.end();
  if (r == compressed.end() || !r->is_object() || !r->contains("items")) return 0;
  return (*r)["items"].is_array() ? (*r)["items"].size() : 0;
}

std::string plot(const std::vector<Turn>& turns, const engine::Thresholds& t) {
  html::Chart c{"chat-tokens", "Tokens per turn", "turn", "tokens", {}, {}, 0};
  html::Series before{"history before", "#98a2b3", {}}, after{"prompt sent", "#2e90fa", {}},
      budget{"budget", "#1d2430", {}, false, true}, soft{"soft", "#fdb022", {}, true, true},
      warn{"warn", "#f79009", {}, true, true}, hard{"hard", "#d92d20", {}, true, true};
  for (size_t i = 0; i < turns.size(); ++i) {
    const json& p = turns[i].compressed;
    const auto x = static_cast<double>(i + 1);
    const double b = num(p, "budget_tokens");
    const double a = num(p, "tokens_after", num(p, "estimated_tokens"));
    before.points.emplace_back(x, num(p, "tokens_before", a));
    after.points.emplace_back(x, a);
    budget.points.emplace_back(x, b);
    soft.points.emplace_back(x, b * t.soft);
    warn.points.emplace_back(x, b * t.warn);
    hard.points.emplace_back(x, b * t.hard);
    const std::string level = str(p, "level");
    const std::string tip = fmt::format("turn {} (task {}): level {}, {} → {} tokens", i + 1,
                                        turns[i].task_id, level, num(p, "tokens_before", a), a);
    if (!level.empty() && level != "none")
      c.markers.push_back({x, a, level_color(level), tip, 'o'});
    if (p.is_object() && p.contains("compaction") && !p["compaction"].is_null())
      c.markers.push_back({x, a, "#7a5af8", tip + ", compaction " + str(p, "compaction"), 's'});
    if (turns[i].summarized) c.markers.push_back({x, a, "#12b76a", tip + ", summarized", '^'});
    if (const size_t n = recalled(p); n > 0)
      c.markers.push_back({x, 0, "#12b76a", tip + fmt::format(", {} recalled", n), 'o'});
  }
  c.series = {before, after, budget, soft, warn, hard};
  return html::line_chart(c) +
         "<p class='muted'>Dots: the turn's level (yellow normal, orange aggressive, red "
         "emergency); purple squares: compactions; green triangles: summaries; green dots on the "
         "axis: turns with recalled messages. Thresholds are the chat's current ones. The prompt "
         "sent can be larger than the history before compression: recalled evidence, pins and "
         "the system prompt are added to what compression kept.</p>";
}

// The words recall searched for on a turn (the newest 12), or "".
std::string recall_terms(const json& compressed) {
  const auto r = compressed.is_object() ? compressed.find("recall") : compressed.end();
  if (r == compressed.end() || !r->is_object()) return "";
  const auto terms = r->find("terms");
  if (terms == r->end() || !terms->is_array()) return "";
  std::string out;
  for (size_t i = 0; i < terms->size() && i < 12; ++i)
    out += (i > 0 ? ", " : "") + ((*terms)[i].is_string() ? (*terms)[i].get<std::string>() : "");
  return out;
}

std::string warnings_text(const std::map<std::string, int>& warnings) {
  std::string out;
  for (const auto& [reason, n] : warnings)
    out += (out.empty() ? "" : ", ") + reason + (n > 1 ? fmt::format(" ×{}", n) : "");
  return out;
}

std::string turn_table(const std::vector<Turn>& turns) {
  std::vector<std::vector<std::string>> rows;
  for (size_t i = turns.size(); i-- > 0 && rows.size() < 50;) {
    const json& p = turns[i].compressed;
    const auto usage =
        turns[i].response.is_object() ? turns[i].response.find("usage") : turns[i].response.end();
    const bool has_usage = usage != turns[i].response.end() && usage->is_object();
    const std::string id = std::to_string(turns[i].task_id);
    rows.push_back({std::to_string(i + 1), html::link("/task", "id", id, id),
                    html::escape(str(p, "level")), html::escape(str(p, "strategy")),
                    html::number(num(p, "tokens_before")), html::number(num(p, "tokens_after")),
                    html::number(num(p, "budget_tokens")), html::number(num(p, "dropped_count")),
                    std::to_string(recalled(p)), turns[i].summarized ? "yes" : "",
                    has_usage ? html::number(num(*usage, "prompt_tokens")) : "-",
                    has_usage ? html::number(num(*usage, "cached_tokens")) : "-",
                    html::escape(warnings_text(turns[i].warnings)), html::escape(recall_terms(p)),
                    "<span class='why'>" + html::escape(str(p, "decision")) + "</span>"});
  }
  return html::table(
      "turns",
      {"turn", "task", "level", "strategy", "history tokens before", "prompt tokens sent",
       "budget tokens", "messages dropped", "items recalled", "summarized", "API prompt tokens",
       "API cached tokens", "warnings", "recall searched for", "why (the engine's decision)"},
      rows);
}

std::string recalled_messages(PageDb& db, const std::vector<Turn>& turns) {
  std::vector<std::vector<std::string>> rows;
  for (size_t i = turns.size(); i-- > 0 && rows.size() < 30;) {
    const json& p = turns[i].compressed;
    if (recalled(p) == 0) continue;
    for (const json& item : p["recall"]["items"]) {
      if (rows.size() >= 30) break;
      const int64_t id = static_cast<int64_t>(num(item, "id"));
      const Rows row =
          db.query(str(item, "source") == "document"  // the ids differ
                       ? "SELECT 'document: ' || title, text FROM documents WHERE id = $1"
                       : "SELECT role, text FROM history WHERE id = $1",
                   {id});
      const std::string role = row.empty() ? "" : row.text(0, 0);
      const std::string text = row.empty() ? "(deleted since)" : row.text(0, 1);
      rows.push_back({std::to_string(turns[i].task_id), std::to_string(id), html::escape(role),
                      html::escape(str(item, "score")),
                      "<pre>" + html::escape(detail::snippet(text, 300)) + "</pre>"});
    }
  }
  return html::table("recalled", {"task", "message", "role", "score", "text"}, rows);
}

std::string one_row(PageDb& db, const std::string& id, const char* sql, const std::string& chat) {
  const Rows r = db.query(sql, {chat});
  if (r.empty()) return "<p class='muted'>none (defaults)</p>";
  return detail::row_table(id, r, {"chat_id"});
}

// The chat's newest 50 open and failed tasks, "id status" each.
std::string open_tasks(PageDb& db, const std::string& chat) {
  const Rows r = db.query(
      "SELECT id, status FROM tasks WHERE chat_id = $1 AND status IN ('queued', 'running', "
      "'failed') ORDER BY id DESC LIMIT 50",
      {chat});
  if (r.empty()) return "<p class='muted'>none</p>";
  std::string list;
  for (size_t i = 0; i < r.size(); ++i)
    list += (i > 0 ? ", " : "") + r.text(i, 0) + " " + r.text(i, 1);
  return html::table("open-tasks", {"field", "value"},
                     {{"tasks", "<pre>" + html::escape(list) + "</pre>"}});
}

}  // namespace

std::optional<std::string> chat_page(PageDb& db, const std::string& chat,
                                     const engine::ContextSettings& settings,
                                     const TranscriptView& transcript) {
  const Rows known = db.query(
      "SELECT (SELECT count(*) FROM history WHERE chat_id = $1), (SELECT count(*) FROM tasks "
      "WHERE chat_id = $1), (SELECT count(*) FROM chat_settings WHERE chat_id = $1)",
      {chat});
  const int64_t messages = known.int64(0, 0);
  const int64_t tasks = known.int64(0, 1);
  if (messages == 0 && tasks == 0 && known.int64(0, 2) == 0) return std::nullopt;
  const std::vector<Turn> turns = turns_of(db, chat);
  const engine::Thresholds t = thresholds_of(db, chat, settings);
  std::string body = fmt::format(
      "<p><span id='messages'>{}</span> stored messages, <span id='tasks'>{}</span> tasks. "
      "Thresholds: soft {}, warn {}, hard {}, target {}.</p>",
      messages, tasks, t.soft, t.warn, t.hard, t.target);
  std::map<std::string, int> warned;
  for (const Turn& turn : turns)
    for (const auto& [reason, n] : turn.warnings) warned[reason] += n;
  body += fmt::format("<p id='chat-warnings'>Warnings over the newest {} answered turns: {}.</p>",
                      turns.size(),
                      warned.empty() ? std::string("none") : html::escape(warnings_text(warned)));
  body += plot(turns, t);
  body += "<h2>Turns (newest 50)</h2>" + turn_table(turns);
  body += "<h2>Recalled messages (newest 30)</h2>" + recalled_messages(db, turns);
  body += "<h2>Transcript</h2>" + transcript_section(db, chat, transcript);
  body += "<h2>Summary (newest)</h2>" +
          one_row(db, "summary",
                  "SELECT id, created_at, covers_through, messages_covered, tokens, model, text "
                  "FROM context_summaries WHERE chat_id = $1 ORDER BY id DESC LIMIT 1",
                  chat);
  body += "<h2>Settings</h2>" +
          one_row(db, "settings", "SELECT * FROM chat_settings WHERE chat_id = $1", chat);
  body += "<h2>State</h2>" +
          one_row(db, "state", "SELECT * FROM context_state WHERE chat_id = $1", chat);
  body += "<h2>Open and failed tasks</h2>" + open_tasks(db, chat);
  return html::page("Chat " + chat, body);
}

}  // namespace autonous::ops
