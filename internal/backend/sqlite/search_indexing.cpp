// SearchIndex's indexing: search_queue's rows (filled by triggers) into the FTS5 tables and the
// term counts, in batches of one write transaction each.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/backend/sqlite/search_index.h"
#include "internal/backend/sqlite/statement_cache.h"
#include "internal/backend/sqlite/write_transaction.h"
#include "internal/recall/search_terms.h"

namespace autonous::store {

bool SearchIndex::any_queued(const std::string& source, const std::optional<std::string>& chat_id) {
  auto any = cache_->get("SELECT EXISTS (SELECT 1 FROM search_queue WHERE source = ?" +
                         std::string(chat_id ? " AND chat_id = ?" : "") + ")");
  any->bind(1, source);
  if (chat_id) any->bind(2, *chat_id);
  const bool queued = any->executeStep() && any->getColumn(0).getInt() != 0;
  any->reset();
  return queued;
}

std::vector<SearchIndex::QueuedRow> SearchIndex::read_queued(
    const std::string& source, const std::optional<std::string>& chat_id, int limit) {
  const std::string select =
      source == "history"
          ? "SELECT q.row_id, h.chat_id, h.text FROM search_queue q LEFT JOIN history h ON "
            "h.id = q.row_id WHERE q.source = 'history'"
          : "SELECT q.row_id, d.chat_id, d.title || char(10) || d.text FROM search_queue q "
            "LEFT JOIN documents d ON d.id = q.row_id WHERE q.source = 'document'";
  auto q = cache_->get(select + (chat_id ? " AND q.chat_id = ?" : "") + " LIMIT ?");
  int bind = 1;
  if (chat_id) q->bind(bind++, *chat_id);
  q->bind(bind, limit);
  std::vector<QueuedRow> rows;
  while (q->executeStep()) {
    QueuedRow r{q->getColumn(0).getInt64(), std::nullopt, std::nullopt};
    if (!q->getColumn(1).isNull()) r.chat = q->getColumn(1).getString();
    if (!q->getColumn(2).isNull()) r.text = q->getColumn(2).getString();
    rows.push_back(std::move(r));
  }
  return rows;
}

void SearchIndex::reindex(const std::string& source, const QueuedRow& r,
                          recall::TermCounts& counts) {
  const std::string table = recall::terms_table(source);
  auto old = cache_->get("SELECT chat, terms FROM " + table + " WHERE rowid = ?");
  old->bind(1, r.id);
  if (old->executeStep())
    recall::count_terms(old->getColumn(0).getString(), old->getColumn(1).getString(), -1, counts);
  old->reset();
  auto del = cache_->get("DELETE FROM " + table + " WHERE rowid = ?");
  del->bind(1, r.id);
  del->exec();
  if (r.text) {
    const std::string chat = recall::row_chat_token(r.chat);
    const std::string terms = recall::search_terms_text(*r.text);
    auto ins = cache_->get("INSERT INTO " + table + "(rowid, chat, terms) VALUES (?, ?, ?)");
    ins->bind(1, r.id);
    ins->bind(2, chat);
    ins->bind(3, terms);
    ins->exec();
    recall::count_terms(chat, terms, +1, counts);
  }
  auto done = cache_->get("DELETE FROM search_queue WHERE source = ? AND row_id = ?");
  done->bind(1, source);
  done->bind(2, r.id);
  done->exec();
}

void SearchIndex::add_counts(const std::string& source, const recall::TermCounts& counts) {
  auto stat = cache_->get(
      "INSERT INTO search_term_rows(source, chat, term, rows) VALUES (?, ?, ?, ?) "
      "ON CONFLICT(source, chat, term) DO UPDATE SET rows = rows + excluded.rows");
  // A count that reaches 0 goes (a deleted chat's terms would otherwise stay forever).
  auto gone = cache_->get(
      "DELETE FROM search_term_rows WHERE source = ? AND chat = ? AND term = ? AND rows <= 0");
  for (const auto& [key, n] : counts) {
    if (n == 0) continue;
    auto& q = n > 0 ? stat : gone;
    stat->bind(1, source);
    stat->bind(2, key.first);
    stat->bind(3, key.second);
    stat->bind(4, n);
    stat->exec();
    stat->reset();
    if (n > 0) continue;
    q->bind(1, source);
    q->bind(2, key.first);
    q->bind(3, key.second);
    q->exec();
    q->reset();
  }
}

int64_t SearchIndex::index_queued(const std::string& source,
                                  const std::optional<std::string>& chat_id, int limit,
                                  bool in_transaction,
                                  std::optional<std::chrono::steady_clock::time_point> until) {
  // Nothing queued (most turns): no write transaction at all.
  if (!any_queued(source, chat_id)) return 0;
  std::optional<db::WriteTransaction> tx;
  if (!in_transaction) tx.emplace(db_);
  // Read first, then change the queue (not while a SELECT over it is stepping).
  const std::vector<QueuedRow> rows = read_queued(source, chat_id, limit);
  recall::TermCounts counts;  // the batch's change
  int64_t done = 0;
  for (const QueuedRow& r : rows) {
    reindex(source, r, counts);  // each row leaves the queue as it is indexed
    ++done;
    if (until && std::chrono::steady_clock::now() >= *until) break;
  }
  add_counts(source, counts);
  if (tx) tx->commit();
  return done;
}

int64_t SearchIndex::index_within(const std::optional<std::string>& chat_id,
                                  std::chrono::milliseconds budget) {
  return recall::index_within(batches(), chat_id, std::chrono::steady_clock::now() + budget);
}

recall::IndexQueued SearchIndex::batches() {
  return [this](const std::string& source, const std::optional<std::string>& chat, int limit,
                std::optional<std::chrono::steady_clock::time_point> until) {
    return index_queued(source, chat, limit, false, until);
  };
}

void SearchIndex::catch_up(const std::string& chat_id) {
  index_within(chat_id, recall::kCatchUpBudget);
}

int64_t SearchIndex::index_backlog(std::chrono::milliseconds budget) {
  return index_within(std::nullopt, budget);
}

void SearchIndex::index_in_transaction(const std::string& chat_id) {
  // The turn's pair (and a few rows more): the reply's write lock is held meanwhile.
  index_queued("history", chat_id, recall::kInTransactionRows, true);
}

int64_t SearchIndex::index_all() { return recall::index_all(batches()); }

}  // namespace autonous::store
