// PgSearchIndex's indexing (search.h): search_queue's rows (filled by triggers) into the
// terms tables and the term counts, in batches of one transaction each; the overall counts'
// write buffer and its fold.

#include <algorithm>
#include <atomic>

#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/search.h"
#include "internal/recall/search_plan.h"
#include "internal/recall/search_terms.h"

namespace autonous::store {
namespace {

using db::pg::param;

// The overall counts' write buffer is folded at most this often per process (one slot's
// connection does it), this many deltas a transaction. Per connection, every slot looked at
// the buffer each second: with 4 processes x 64 slots about one look per task, each walking
// the rows the last fold deleted and vacuum had not reclaimed yet (bench/scale/manycore.py).
constexpr std::chrono::seconds kFoldEvery{1};
constexpr int64_t kFoldBatch = 20000;
std::atomic<int64_t> last_fold_ns{0};  // steady_clock's; 0: never

// A batch's writes in one statement (inside a turn's completion every statement is a round trip
// while the transaction holds its locks): the rows' terms replaced (a row whose text is gone
// loses them), the queue's rows gone, the overall counts' deltas and the chats' counts added.
// The sub-statements share one snapshot, so no two of them touch the same row.
std::string batch_write(const std::string& table) {
  return "WITH gone AS (DELETE FROM " + table +
         " WHERE rowid = ANY($1::bigint[]) AND rowid <> ALL($2::bigint[])), "
         "terms AS (INSERT INTO " +
         table +
         "(rowid, chat, terms) SELECT * FROM unnest($2::bigint[], $3::text[], $4::text[]) ON "
         "CONFLICT (rowid) DO UPDATE SET chat = excluded.chat, terms = excluded.terms), "
         "queue AS (DELETE FROM search_queue WHERE source = $5 AND row_id = ANY($1::bigint[])), "
         "deltas AS (INSERT INTO search_term_deltas(source, term, rows) SELECT $5, t, n FROM "
         "unnest($6::text[], $7::bigint[]) AS d(t, n)) "
         "INSERT INTO search_term_rows(source, chat, term, rows) SELECT $5, c, t, n FROM "
         "unnest($8::text[], $9::text[], $10::bigint[]) AS d(c, t, n) ON CONFLICT (source, chat, "
         "term) DO UPDATE SET rows = search_term_rows.rows + excluded.rows";
}

}  // namespace

CountChange count_change(const recall::TermCounts& counts) {
  CountChange out;
  for (const auto& [key, n] : counts) {
    if (n == 0) continue;
    if (key.first.empty()) {
      out.overall_terms.push_back(key.second);
      out.overall_rows.push_back(param(n));
    } else {
      out.chats.push_back(key.first);
      out.terms.push_back(key.second);
      out.rows.push_back(param(n));
      out.lowered = out.lowered || n < 0;
    }
  }
  return out;
}

NewRowsIndex index_new_rows(const std::string& chat_id, const std::vector<std::string>& texts) {
  NewRowsIndex out;
  out.chat = recall::chat_token(chat_id);
  recall::TermCounts counts;
  for (const std::string& text : texts) {
    out.terms.push_back(recall::search_terms_text(text));
    recall::count_terms(out.chat, out.terms.back(), +1, counts);
  }
  out.counts = count_change(counts);
  return out;
}

// Indexing --------------------------------------------------------------------------------------

int64_t PgSearchIndex::index_queued(const std::string& source,
                                    const std::optional<std::string>& chat_id, int limit,
                                    bool in_transaction,
                                    std::optional<std::chrono::steady_clock::time_point> until) {
  const std::string where = chat_id ? " AND q.chat_id = $2" : "";
  std::vector<db::pg::Param> any_params{param(source)};
  if (chat_id) any_params.push_back(param(*chat_id));
  // Nothing queued (most calls outside a turn): no transaction at all. Within one (a turn's),
  // the select below tells as much.
  if (!in_transaction &&
      c_.query("SELECT EXISTS (SELECT 1 FROM search_queue q WHERE q.source = $1" + where + ")",
               any_params)
              .text(0, 0) != "t")
    return 0;
  std::optional<db::pg::Transaction> tx;
  if (!in_transaction) tx.emplace(c_);
  const std::string table = recall::terms_table(source);
  // Each queued row with its text now (NULL: gone) and its terms indexed before (NULL: none).
  const std::string select =
      std::string(
          source == "history"
              ? "SELECT q.row_id, h.chat_id, h.text, o.chat, o.terms FROM search_queue q LEFT JOIN "
                "history h ON h.id = q.row_id"
              : "SELECT q.row_id, d.chat_id, d.title || chr(10) || d.text, o.chat, o.terms FROM "
                "search_queue q LEFT JOIN documents d ON d.id = q.row_id") +
      " LEFT JOIN " + table + " o ON o.rowid = q.row_id WHERE q.source = $1";
  std::vector<db::pg::Param> params = any_params;
  params.push_back(param(int64_t{limit}));
  // Another worker's batch is skipped, not waited for.
  const db::pg::Result rows = c_.query(
      select + where + " LIMIT $" + std::to_string(params.size()) + " FOR UPDATE OF q SKIP LOCKED",
      params);
  if (rows.rows() == 0) {
    if (tx) tx->commit();
    return 0;
  }
  // The rows' terms computed here (the costly part, until `until`), then written in one
  // statement: the old terms out (counted down), the new ones in, the queue's rows gone.
  std::vector<db::pg::Param> ids, new_ids, new_chats, new_terms;
  recall::TermCounts counts;
  for (int i = 0; i < rows.rows(); ++i) {
    ids.push_back(param(rows.int64(i, 0)));
    if (!rows.is_null(i, 3)) recall::count_terms(rows.text(i, 3), rows.text(i, 4), -1, counts);
    if (!rows.is_null(i, 2)) {
      const std::string chat = recall::row_chat_token(
          rows.is_null(i, 1) ? std::nullopt : std::optional<std::string>(rows.text(i, 1)));
      std::string terms = recall::search_terms_text(rows.text(i, 2));
      recall::count_terms(chat, terms, +1, counts);
      new_ids.push_back(ids.back());
      new_chats.push_back(chat);
      new_terms.push_back(std::move(terms));
    }
    if (until && std::chrono::steady_clock::now() >= *until) break;
  }
  const CountChange change = count_change(counts);
  const std::string chats_array = db::pg::array_literal(change.chats);
  const std::string terms_array = db::pg::array_literal(change.terms);
  c_.query(batch_write(table),
           {db::pg::array_literal(ids), db::pg::array_literal(new_ids),
            db::pg::array_literal(new_chats), db::pg::array_literal(new_terms), param(source),
            db::pg::array_literal(change.overall_terms), db::pg::array_literal(change.overall_rows),
            chats_array, terms_array, db::pg::array_literal(change.rows)});
  if (change.lowered)  // after the counts were added: a statement of its own sees them
    c_.query(
        "DELETE FROM search_term_rows s USING unnest($2::text[], $3::text[]) AS d(c, t) WHERE "
        "s.source = $1 AND s.chat = d.c AND s.term = d.t AND s.rows <= 0",
        {param(source), chats_array, terms_array});
  if (tx) tx->commit();
  return static_cast<int64_t>(ids.size());
}

bool PgSearchIndex::fold_deltas() {
  // Nothing buffered (most calls): no transaction.
  if (c_.query("SELECT EXISTS (SELECT 1 FROM search_term_deltas)").text(0, 0) != "t") return false;
  db::pg::Transaction tx(c_);
  // One folder at a time; the others go on (their deltas wait for the next fold).
  if (c_.query("SELECT pg_try_advisory_xact_lock(hashtextextended('autonous.fold_terms', 0))")
          .text(0, 0) != "t")
    return false;
  const db::pg::Result folded = c_.query(
      "WITH d AS (DELETE FROM search_term_deltas WHERE ctid = ANY(ARRAY(SELECT ctid FROM "
      "search_term_deltas LIMIT $1)) RETURNING source, term, rows), "
      "s AS (SELECT source, term, sum(rows) AS rows FROM d GROUP BY source, term), "
      "f AS (INSERT INTO search_term_rows(source, chat, term, rows) SELECT source, '', term, "
      "rows FROM s ORDER BY source, term ON CONFLICT (source, chat, term) DO UPDATE SET rows "
      "= search_term_rows.rows + excluded.rows RETURNING source, term, rows) "
      "SELECT source, term, rows, (SELECT count(*) FROM d) FROM f",
      {param(kFoldBatch)});
  // A count that reached 0 goes, by its key (a deleted chat's terms would otherwise stay).
  for (int i = 0; i < folded.rows(); ++i)
    if (folded.int64(i, 2) <= 0)
      c_.query("DELETE FROM search_term_rows WHERE source = $1 AND chat = '' AND term = $2",
               {param(folded.text(i, 0)), param(folded.text(i, 1))});
  tx.commit();
  return folded.rows() > 0 && folded.int64(0, 3) >= kFoldBatch;  // a full batch: more waiting
}

void PgSearchIndex::fold_now_and_then() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_fold_ns.load();
  if (last != 0 && now - last < std::chrono::nanoseconds(kFoldEvery).count()) return;
  if (!last_fold_ns.compare_exchange_strong(last, now)) return;  // another slot's turn
  if (fold_deltas()) last_fold_ns.store(0);  // more waiting: the next turn folds again
}

int64_t PgSearchIndex::index_within(const std::optional<std::string>& chat_id,
                                    std::chrono::milliseconds budget) {
  const auto until = std::chrono::steady_clock::now() + budget;  // the fold's time included
  fold_now_and_then();
  return recall::index_within(batches(), chat_id, until);
}

recall::IndexQueued PgSearchIndex::batches() {
  return [this](const std::string& source, const std::optional<std::string>& chat, int limit,
                std::optional<std::chrono::steady_clock::time_point> until) {
    return index_queued(source, chat, limit, false, until);
  };
}

void PgSearchIndex::catch_up(const std::string& chat_id) {
  const auto until = std::chrono::steady_clock::now() + recall::kCatchUpBudget;
  fold_now_and_then();
  // One statement for a turn's usual case, nothing queued: the chat's rows, documents, and
  // whether any document is indexed (a deployment without documents then pays nothing more for
  // their search: search_documents).
  const db::pg::Result r = c_.query(
      "SELECT EXISTS (SELECT 1 FROM search_queue q WHERE q.source = 'history' AND q.chat_id = "
      "$1), EXISTS (SELECT 1 FROM search_queue q WHERE q.source = 'document'), EXISTS (SELECT 1 "
      "FROM document_terms)",
      {param(chat_id)});
  documents_found_ = r.text(0, 1) == "t" || r.text(0, 2) == "t";
  if (r.text(0, 0) == "t" || r.text(0, 1) == "t") recall::index_within(batches(), chat_id, until);
}

int64_t PgSearchIndex::index_backlog(std::chrono::milliseconds budget) {
  return index_within(std::nullopt, budget);
}

void PgSearchIndex::index_in_transaction(const std::string& chat_id) {
  if (pair_indexed_ != nullptr && *pair_indexed_) {
    *pair_indexed_ = false;  // the completion indexed its rows itself: nothing of its own queued
    return;
  }
  index_queued("history", chat_id, recall::kInTransactionRows, true);
}

int64_t PgSearchIndex::index_all() {
  const int64_t total = recall::index_all(batches());
  while (fold_deltas()) {
  }
  return total;
}

}  // namespace autonous::store
