#include "internal/backend/sqlite/search_index.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <sqlite3.h>

#include "internal/backend/sqlite/sqlite_provider.h"
#include "internal/backend/sqlite/statement_cache.h"
#include "internal/backend/sqlite/write_transaction.h"
#include "internal/recall/search_plan.h"
#include "internal/recall/search_terms.h"

namespace autonous::store {
namespace {

std::string quoted(const std::string& term) {
  std::string out = "\"";
  for (const char c : term) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

int on_progress(void* self) {
  const auto* deadline = static_cast<std::optional<std::chrono::steady_clock::time_point>*>(self);
  return deadline->has_value() && std::chrono::steady_clock::now() > **deadline ? 1 : 0;
}

}  // namespace

SearchIndex::SearchIndex(SQLite::Database& db)
    : db_(db), cache_(std::make_unique<db::StatementCache>(db)) {}

SearchIndex::~SearchIndex() {
  if (deadline_) sqlite3_progress_handler(db_.getHandle(), 0, nullptr, nullptr);
}

int64_t SearchIndex::rows(const std::string& table) {
  // FTS5's "averages" record (rowid 1 of %_data) starts with the row count as a varint: O(1),
  // where count(*) would read every row.
  auto q = cache_->get("SELECT block FROM " + table + "_data WHERE id = 1");
  int64_t n = 0;
  if (q->executeStep()) {
    const SQLite::Column block = q->getColumn(0);
    const auto* p = static_cast<const unsigned char*>(block.getBlob());
    const int size = block.getBytes();
    for (int i = 0; p != nullptr && i < size && i < 9; ++i) {
      if (i == 8) {
        n = (n << 8) | p[i];
        break;
      }
      n = (n << 7) | (p[i] & 0x7F);
      if ((p[i] & 0x80) == 0) break;
    }
  }
  q->reset();
  return n;
}

int64_t SearchIndex::rows_with(const std::string& source, const std::string& chat,
                               const std::string& term) {
  auto q =
      cache_->get("SELECT rows FROM search_term_rows WHERE source = ? AND chat = ? AND term = ?");
  q->bind(1, source);
  q->bind(2, chat);
  q->bind(3, term);
  const int64_t n = q->executeStep() ? q->getColumn(0).getInt64() : 0;
  q->reset();
  return n;
}

SearchIndex::Query SearchIndex::query(const std::string& table, const std::string& chat,
                                      const std::vector<std::string>& terms) {
  const std::string source = table == "history_terms" ? "history" : "document";
  const recall::QueryPlan plan = recall::plan_query(
      terms, static_cast<double>(rows(table)), chat,
      [&](const std::string& c, const std::string& t) { return rows_with(source, c, t); });
  Query out;
  out.terms = plan.terms;
  out.rows = plan.rows;
  out.searched = plan.searched;
  out.idf = plan.idf;
  out.foreign = plan.foreign;
  // AND walks the rarer list and seeks in the other.
  const char* join = plan.all ? " AND " : " OR ";
  for (const std::string& t : out.terms) {
    if (!out.match.empty()) out.match += join;
    out.match += quoted(t);
  }
  return out;
}

recall::SearchResult SearchIndex::search_history(const std::string& chat_id,
                                                 const std::vector<std::string>& terms,
                                                 int64_t after_id, int64_t before_id, int limit) {
  recall::SearchResult out;
  const std::string token = recall::chat_token(chat_id);
  const Query qy = query("history_terms", token, terms);
  out.terms = qy.terms;
  out.term_rows = qy.rows;
  out.searched_rows = qy.searched;
  out.query_idf = qy.idf;
  if (qy.terms.empty() || limit <= 0) return out;
  // Three ways to keep other chats' rows out, cheapest first. Few of them match: take that many
  // more winners and drop them as they are read. Otherwise a chat's token narrows the search, but
  // walking a big chat's token list costs more than it saves: such a chat is searched by its terms
  // alone (their rows are few: kMaxPostings) and its own rows picked by the stored chat column.
  const bool few_foreign = qy.foreign <= recall::kMaxForeignRows;
  const bool big = !few_foreign && rows_with("history", token, "") > recall::kBigChatRows;
  auto q = cache_->get(
      "SELECT rowid, -bm25(history_terms, 0.0, 1.0) AS score FROM history_terms WHERE "
      "history_terms MATCH ? AND rowid > ? AND rowid < ? AND (? OR chat = ?) "
      "ORDER BY score DESC LIMIT ?");
  const std::string match = "terms : (" + qy.match + ")";
  q->bind(1, few_foreign || big ? match : "chat : " + quoted(token) + " AND " + match);
  q->bind(2, after_id);
  q->bind(3, before_id);
  q->bind(4, big ? 0 : 1);
  q->bind(5, token);
  q->bind(6, static_cast<int64_t>(limit) + (few_foreign ? qy.foreign : 0));
  std::vector<std::pair<int64_t, double>> hits;
  while (q->executeStep())
    hits.emplace_back(q->getColumn(0).getInt64(), q->getColumn(1).getDouble());
  q->reset();
  out.candidates = read_candidates(chat_id, hits, limit, false);
  return out;
}

recall::SearchResult SearchIndex::search_documents(const std::string& chat_id,
                                                   const std::vector<std::string>& terms,
                                                   int limit) {
  recall::SearchResult out;
  const Query qy = query("document_terms", "", terms);
  out.terms = qy.terms;
  out.term_rows = qy.rows;
  out.searched_rows = qy.searched;
  out.query_idf = qy.idf;
  if (qy.terms.empty() || limit <= 0) return out;
  auto q = cache_->get(
      "SELECT d.id, d.title, d.text, d.source, d.created_at, -bm25(document_terms, 0.0, "
      "1.0) "
      "FROM document_terms JOIN documents d ON d.id = document_terms.rowid "
      "WHERE document_terms MATCH ? AND (d.chat_id IS NULL OR d.chat_id = ?) "
      "ORDER BY bm25(document_terms, 0.0, 1.0) LIMIT ?");
  q->bind(1, "(chat : " + quoted(recall::kEveryChatToken) + " OR chat : " +
                 quoted(recall::chat_token(chat_id)) + ") AND terms : (" + qy.match + ")");
  q->bind(2, chat_id);
  q->bind(3, limit);
  while (q->executeStep()) {
    recall::Candidate c;
    c.document = true;
    c.message.history_id = q->getColumn(0).getInt64();
    c.title = q->getColumn(1).getString();
    c.message.content = q->getColumn(2).getString();
    c.source = q->getColumn(3).getString();
    c.message.at = q->getColumn(4).getString();
    c.bm25 = q->getColumn(5).getDouble();
    out.candidates.push_back(std::move(c));
  }
  q->reset();
  return out;
}

std::vector<common::Message> SearchIndex::neighbours(const std::string& chat_id, int64_t id,
                                                     int count, int64_t after_id,
                                                     int64_t before_id) {
  if (count <= 0) return {};
  auto older = cache_->get(
      "SELECT id, role, text, created_at FROM history INDEXED BY history_by_chat WHERE chat_id "
      "= ? AND id < ? AND id > ? ORDER BY id DESC LIMIT ?");
  older->bind(1, chat_id);
  older->bind(2, id);
  older->bind(3, after_id);
  older->bind(4, count);
  std::vector<common::Message> out = read_messages(*older);
  older->reset();
  std::reverse(out.begin(), out.end());
  auto newer = cache_->get(
      "SELECT id, role, text, created_at FROM history INDEXED BY history_by_chat WHERE chat_id "
      "= ? AND id > ? AND id < ? ORDER BY id LIMIT ?");
  newer->bind(1, chat_id);
  newer->bind(2, id);
  newer->bind(3, before_id);
  newer->bind(4, count);
  for (common::Message& m : read_messages(*newer)) out.push_back(std::move(m));
  newer->reset();
  return out;
}

void SearchIndex::set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) {
  deadline_ = deadline;
  if (deadline_)
    sqlite3_progress_handler(db_.getHandle(), 1000, on_progress, &deadline_);
  else
    sqlite3_progress_handler(db_.getHandle(), 0, nullptr, nullptr);
}

}  // namespace autonous::store
