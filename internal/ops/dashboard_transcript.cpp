// The chat page's transcript (dashboard.h): the chat's stored messages, newest first, a page at a
// time, optionally only those holding a search text.

#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "internal/ops/dashboard.h"
#include "internal/ops/dashboard_support.h"
#include "internal/ops/html.h"

namespace autonous::ops {
namespace {

constexpr int64_t kPage = 50;           // messages a page
constexpr int64_t kSearched = 20000;    // a search reads at most the chat's newest this many
constexpr size_t kMessageChars = 2000;  // of each message shown

// `text` as a LIKE pattern that matches it anywhere: %, _ and \ escaped (ESCAPE '\').
std::string contains_pattern(const std::string& text) {
  std::string out = "%";
  for (const char c : text) {
    if (c == '%' || c == '_' || c == '\\') out += '\\';
    out += c;
  }
  return out + "%";
}

std::string search_form(const std::string& chat, const std::string& search) {
  return fmt::format(
      "<form id='transcript-search' method='get' action='/chat'>"
      "<input type='hidden' name='id' value='{}'><input type='search' name='q' value='{}' "
      "placeholder='words in a message' aria-label='search the messages'> "
      "<button type='submit'>Search</button></form>",
      html::escape(chat), html::escape(search));
}

}  // namespace

std::string transcript_section(PageDb& db, const std::string& chat, const TranscriptView& view) {
  const int64_t before = view.before > 0 ? view.before : std::numeric_limits<int64_t>::max();
  // Searching: lower() on both sides (the backend's own case folding: ASCII on SQLite, Unicode
  // on PostgreSQL), among the chat's newest kSearched messages.
  const Rows r =
      view.search.empty()
          ? db.query(
                "SELECT id, role, created_at, task_id, text FROM history WHERE chat_id = $1 "
                "AND id < $2 ORDER BY id DESC LIMIT $3",
                {chat, before, kPage + 1})
          : db.query(
                "SELECT id, role, created_at, task_id, text FROM history WHERE chat_id = $1 "
                "AND id < $2 AND id >= (SELECT coalesce(min(id), 0) FROM (SELECT id FROM "
                "history WHERE chat_id = $1 ORDER BY id DESC LIMIT $5) newest) AND "
                "lower(text) LIKE lower($4) ESCAPE '\\' ORDER BY id DESC LIMIT $3",
                {chat, before, kPage + 1, contains_pattern(view.search), kSearched});
  std::vector<std::vector<std::string>> rows;
  const size_t shown = std::min<size_t>(r.size(), kPage);
  for (size_t i = 0; i < shown; ++i) {
    const std::string task = r.is_null(i, 3) ? "" : r.text(i, 3);
    rows.push_back({r.text(i, 0), html::escape(r.text(i, 2)), html::escape(r.text(i, 1)),
                    task.empty() ? "" : html::link("/task", "id", task, task),
                    detail::bounded_pre("", r.text(i, 4), kMessageChars)});
  }
  std::string out = search_form(chat, view.search);
  if (!view.search.empty())
    out += fmt::format(
        "<p class='muted'>Messages holding “{}” (case-insensitive), among the "
        "chat's newest {} messages.</p>",
        html::escape(view.search), html::number(static_cast<double>(kSearched)));
  out += html::table("transcript", {"message", "time", "role", "task", "text"}, rows);
  std::map<std::string, std::string> query = {{"id", chat}};
  if (!view.search.empty()) query["q"] = view.search;
  std::string nav;
  if (view.before > 0)
    nav += fmt::format("<a id='newest' href='{}'>Newest</a> ", html::href("/chat", query));
  if (r.size() > static_cast<size_t>(kPage)) {
    query["before"] = r.text(shown - 1, 0);
    nav += fmt::format("<a id='older' href='{}'>Older messages</a>", html::href("/chat", query));
  }
  return out + (nav.empty() ? "" : "<p>" + nav + "</p>");
}

}  // namespace autonous::ops
