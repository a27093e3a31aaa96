#include "internal/store/pg_search.h"

#include <algorithm>
#include <cstring>
#include <queue>
#include <stdexcept>

#include <fmt/format.h>

#include "internal/db/pg_connection.h"
#include "internal/store/search_index.h"
#include "internal/store/search_plan.h"
#include "internal/tokens/search_terms.h"

namespace autonous::store {
namespace {

using db::pg::param;

constexpr int kBatch = 2000;
constexpr int kTimedBatch = 250;
constexpr int kInTransactionRows = 16;
// The overall counts' write buffer is folded at most this often per connection, this many
// deltas a transaction.
constexpr std::chrono::seconds kFoldEvery{1};
constexpr int64_t kFoldBatch = 20000;

// The terms column as a tsvector: the expression migrations/postgres/0007 indexes.
constexpr const char* kTermsVector =
    "array_to_tsvector(array_remove(string_to_array(terms, ' '), ''))";

double term_count(const std::string& terms) {
  return static_cast<double>(std::count(terms.begin(), terms.end(), ' ') + 1);
}

std::string terms_table(const std::string& source) {
  return source == "history" ? "history_terms" : "document_terms";
}

// `terms` as a tsquery in its input syntax (no text search configuration applies): quoted
// lexemes joined by | (any) or & (all).
std::string ts_query(const std::vector<std::string>& terms, bool all) {
  std::string out;
  for (const std::string& t : terms) {
    if (!out.empty()) out += all ? " & " : " | ";
    out += '\'';
    for (const char c : t) {
      if (c == '\'' || c == '\\') out += '\\';
      out += c;
    }
    out += '\'';
  }
  return out;
}

void count_terms(const std::string& chat, const std::string& terms, int64_t sign,
                 SearchIndex::Counts& counts) {
  std::vector<std::string> seen;
  for (size_t at = 0; at < terms.size();) {
    const size_t end = std::min(terms.find(' ', at), terms.size());
    if (end > at) seen.push_back(terms.substr(at, end - at));
    at = end + 1;
  }
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  for (const std::string& t : seen) {
    counts[{std::string(), t}] += sign;
    counts[{chat, t}] += sign;
  }
  counts[{chat, std::string()}] += sign;
  counts[{std::string(), std::string()}] += sign;
}

std::string hex_bytes(const std::vector<float>& v) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\\x";
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(float); ++i) {
    out += kHex[p[i] >> 4];
    out += kHex[p[i] & 0xF];
  }
  return out;
}

// A bytea in PostgreSQL's hex output ("\x0a1b…") as floats; empty when its size is not `n`.
std::vector<float> floats(const std::string& hex, size_t n) {
  if (hex.size() != 2 + n * sizeof(float) * 2 || hex.compare(0, 2, "\\x") != 0) return {};
  std::vector<float> v(n);
  auto* p = reinterpret_cast<unsigned char*>(v.data());
  const auto nibble = [](char c) {
    return static_cast<unsigned char>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  };
  for (size_t i = 0; i < n * sizeof(float); ++i)
    p[i] = static_cast<unsigned char>(nibble(hex[2 + 2 * i]) << 4 | nibble(hex[3 + 2 * i]));
  return v;
}

}  // namespace

// Indexing --------------------------------------------------------------------------------------

int64_t PgSearchIndex::index_queued(const std::string& source,
                                    const std::optional<std::string>& chat_id, int limit,
                                    bool in_transaction,
                                    std::optional<std::chrono::steady_clock::time_point> until) {
  const std::string where = chat_id ? " AND q.chat_id = $2" : "";
  std::vector<db::pg::Param> any_params{param(source)};
  if (chat_id) any_params.push_back(param(*chat_id));
  if (c_.query("SELECT EXISTS (SELECT 1 FROM search_queue q WHERE q.source = $1" + where + ")",
               any_params)
          .text(0, 0) != "t")
    return 0;  // nothing queued (most turns): no transaction at all
  std::optional<db::pg::Transaction> tx;
  if (!in_transaction) tx.emplace(c_);
  const std::string select =
      source == "history"
          ? "SELECT q.row_id, h.chat_id, h.text FROM search_queue q LEFT JOIN history h ON h.id = "
            "q.row_id WHERE q.source = $1"
          : "SELECT q.row_id, d.chat_id, d.title || chr(10) || d.text FROM search_queue q LEFT "
            "JOIN documents d ON d.id = q.row_id WHERE q.source = $1";
  std::vector<db::pg::Param> params = any_params;
  params.push_back(param(int64_t{limit}));
  // Another worker's batch is skipped, not waited for.
  const db::pg::Result rows = c_.query(
      select + where + " LIMIT $" + std::to_string(params.size()) + " FOR UPDATE OF q SKIP LOCKED",
      params);
  const std::string table = terms_table(source);
  SearchIndex::Counts counts;
  int64_t done = 0;
  for (int i = 0; i < rows.rows(); ++i) {
    const int64_t id = rows.int64(i, 0);
    const db::pg::Result old =
        c_.query("DELETE FROM " + table + " WHERE rowid = $1 RETURNING chat, terms", {param(id)});
    if (old.rows() > 0) count_terms(old.text(0, 0), old.text(0, 1), -1, counts);
    if (!rows.is_null(i, 2)) {
      const std::string chat =
          rows.is_null(i, 1) ? std::string("call") : SearchIndex::chat_token(rows.text(i, 1));
      const std::string terms = tokens::search_terms_text(rows.text(i, 2));
      c_.query("INSERT INTO " + table + "(rowid, chat, terms) VALUES ($1, $2, $3)",
               {param(id), param(chat), param(terms)});
      count_terms(chat, terms, +1, counts);
    }
    c_.query("DELETE FROM search_queue WHERE source = $1 AND row_id = $2",
             {param(source), param(id)});
    ++done;
    if (until && std::chrono::steady_clock::now() >= *until) break;
  }
  // A chat's counts are written by that chat's turns, which never run at once: updated in
  // place. The overall counts (chat "") go to the write buffer (migrations/postgres/0010).
  std::string terms_array = "{";
  std::string rows_array = "{";
  for (const auto& [key, n] : counts) {
    if (n == 0 || !key.first.empty()) continue;
    if (terms_array.size() > 1) {
      terms_array += ',';
      rows_array += ',';
    }
    terms_array += '"';
    for (const char ch : key.second) {
      if (ch == '"' || ch == '\\') terms_array += '\\';
      terms_array += ch;
    }
    terms_array += '"';
    rows_array += std::to_string(n);
  }
  if (terms_array.size() > 1)
    c_.query(
        "INSERT INTO search_term_deltas(source, term, rows) SELECT $1, t, n FROM "
        "unnest($2::text[], $3::bigint[]) AS d(t, n)",
        {param(source), terms_array + "}", rows_array + "}"});
  for (const auto& [key, n] : counts) {
    if (n == 0 || key.first.empty()) continue;
    c_.query(
        "INSERT INTO search_term_rows(source, chat, term, rows) VALUES ($1, $2, $3, $4) ON "
        "CONFLICT (source, chat, term) DO UPDATE SET rows = search_term_rows.rows + "
        "excluded.rows",
        {param(source), param(key.first), param(key.second), param(n)});
    if (n < 0)
      c_.query(
          "DELETE FROM search_term_rows WHERE source = $1 AND chat = $2 AND term = $3 AND rows "
          "<= 0",
          {param(source), param(key.first), param(key.second)});
  }
  if (tx) tx->commit();
  return done;
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
      "WITH d AS (DELETE FROM search_term_deltas WHERE id IN (SELECT id FROM "
      "search_term_deltas ORDER BY id LIMIT $1) RETURNING source, term, rows), "
      "s AS (SELECT source, term, sum(rows) AS rows FROM d GROUP BY source, term) "
      "INSERT INTO search_term_rows(source, chat, term, rows) SELECT source, '', term, rows "
      "FROM s ORDER BY source, term ON CONFLICT (source, chat, term) DO UPDATE SET rows "
      "= search_term_rows.rows + excluded.rows RETURNING source, term, rows",
      {param(kFoldBatch)});
  // A count that reached 0 goes, by its key (a deleted chat's terms would otherwise stay).
  for (int i = 0; i < folded.rows(); ++i)
    if (folded.int64(i, 2) <= 0)
      c_.query("DELETE FROM search_term_rows WHERE source = $1 AND chat = '' AND term = $2",
               {param(folded.text(i, 0)), param(folded.text(i, 1))});
  tx.commit();
  return folded.rows() > 0;  // more may be waiting
}

void PgSearchIndex::fold_now_and_then() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_fold_ < kFoldEvery) return;
  last_fold_ = now;
  fold_deltas();
}

int64_t PgSearchIndex::index_within(const std::optional<std::string>& chat_id,
                                    std::chrono::milliseconds budget) {
  const auto until = std::chrono::steady_clock::now() + budget;
  fold_now_and_then();
  int64_t total = 0;
  for (const std::string source : {"history", "document"}) {
    const std::optional<std::string> chat = source == "history" ? chat_id : std::nullopt;
    int64_t n = 0;
    do {
      n = index_queued(source, chat, kTimedBatch, false, until);
      total += n;
    } while (n == kTimedBatch && std::chrono::steady_clock::now() < until);
    if (std::chrono::steady_clock::now() >= until) break;
  }
  return total;
}

void PgSearchIndex::catch_up(const std::string& chat_id) { index_within(chat_id, kCatchUpBudget); }

int64_t PgSearchIndex::index_backlog(std::chrono::milliseconds budget) {
  return index_within(std::nullopt, budget);
}

void PgSearchIndex::index_in_transaction(const std::string& chat_id) {
  index_queued("history", chat_id, kInTransactionRows, true);
}

int64_t PgSearchIndex::index_all() {
  int64_t total = 0;
  for (const std::string source : {"history", "document"}) {
    int64_t n = 0;
    do {
      n = index_queued(source, std::nullopt, kBatch, false);
      total += n;
    } while (n == kBatch);
  }
  while (fold_deltas()) {
  }
  return total;
}

// Searching -------------------------------------------------------------------------------------

int64_t PgSearchIndex::rows_with(const std::string& source, const std::string& chat,
                                 const std::string& term) {
  if (chat.empty())  // the folded count and the deltas not folded yet
    return c_
        .query(
            "SELECT coalesce((SELECT rows FROM search_term_rows WHERE source = $1 AND chat = '' "
            "AND term = $2), 0) + coalesce((SELECT sum(rows) FROM search_term_deltas WHERE "
            "source = $1 AND term = $2), 0)",
            {param(source), param(term)})
        .int64(0, 0);
  const db::pg::Result r =
      c_.query("SELECT rows FROM search_term_rows WHERE source = $1 AND chat = $2 AND term = $3",
               {param(source), param(chat), param(term)});
  return r.rows() > 0 ? r.int64(0, 0) : 0;
}

context::SearchResult PgSearchIndex::search_history(const std::string& chat_id,
                                                    const std::vector<std::string>& terms,
                                                    int64_t after_id, int64_t before_id,
                                                    int limit) {
  check_deadline();
  context::SearchResult out;
  const std::string token = SearchIndex::chat_token(chat_id);
  const auto rows = [&](const std::string& c, const std::string& t) {
    return rows_with("history", c, t);
  };
  const double total = static_cast<double>(rows("", ""));
  const QueryPlan plan = plan_query(terms, total, token, rows);
  out.terms = plan.terms;
  out.query_idf = plan.idf;
  if (plan.terms.empty() || limit <= 0) return out;
  std::vector<int64_t> doc_rows;
  for (const std::string& t : plan.terms) doc_rows.push_back(rows("", t));
  const db::pg::Result matched = c_.query(
      std::string("SELECT t.rowid, t.terms, h.role, h.text, h.created_at FROM history_terms t "
                  "JOIN history h ON h.id = t.rowid WHERE ") +
          kTermsVector +
          " @@ $1::tsquery AND t.chat = $2 AND t.rowid > $3 AND t.rowid < $4 "
          "AND h.chat_id = $5 ORDER BY t.rowid DESC LIMIT $6",
      {ts_query(plan.terms, plan.all), param(token), param(after_id), param(before_id),
       param(chat_id), param(kMaxPostings + kMaxForeignRows)});
  double length = 0;
  for (int i = 0; i < matched.rows(); ++i) length += term_count(matched.text(i, 1));
  const double avg = matched.rows() > 0 ? length / matched.rows() : 1.0;
  for (int i = 0; i < matched.rows(); ++i) {
    context::Candidate c;
    c.message.history_id = matched.int64(i, 0);
    c.terms = matched.text(i, 1);
    c.message.role = common::parse_role(matched.text(i, 2)).value_or(common::Role::kUser);
    c.message.content = matched.text(i, 3);
    c.message.at = matched.text(i, 4);
    c.bm25 = bm25(c.terms, plan.terms, doc_rows, total, avg);
    out.candidates.push_back(std::move(c));
  }
  std::stable_sort(out.candidates.begin(), out.candidates.end(),
                   [](const auto& a, const auto& b) { return a.bm25 > b.bm25; });
  if (static_cast<int>(out.candidates.size()) > limit) out.candidates.resize(limit);
  return out;
}

context::SearchResult PgSearchIndex::search_documents(const std::string& chat_id,
                                                      const std::vector<std::string>& terms,
                                                      int limit) {
  check_deadline();
  context::SearchResult out;
  const auto rows = [&](const std::string& c, const std::string& t) {
    return rows_with("document", c, t);
  };
  const double total = static_cast<double>(rows("", ""));
  const QueryPlan plan = plan_query(terms, total, "", rows);
  out.terms = plan.terms;
  out.query_idf = plan.idf;
  if (plan.terms.empty() || limit <= 0) return out;
  std::vector<int64_t> doc_rows;
  for (const std::string& t : plan.terms) doc_rows.push_back(rows("", t));
  const db::pg::Result matched = c_.query(
      std::string("SELECT d.id, d.title, d.text, coalesce(d.source, ''), d.created_at, t.terms "
                  "FROM document_terms t JOIN documents d ON d.id = t.rowid WHERE ") +
          kTermsVector +
          " @@ $1::tsquery AND (d.chat_id IS NULL OR d.chat_id = $2) ORDER BY d.id DESC LIMIT $3",
      {ts_query(plan.terms, plan.all), param(chat_id), param(kMaxPostings)});
  double length = 0;
  for (int i = 0; i < matched.rows(); ++i) length += term_count(matched.text(i, 5));
  const double avg = matched.rows() > 0 ? length / matched.rows() : 1.0;
  for (int i = 0; i < matched.rows(); ++i) {
    context::Candidate c;
    c.document = true;
    c.message.history_id = matched.int64(i, 0);
    c.title = matched.text(i, 1);
    c.message.content = matched.text(i, 2);
    c.source = matched.text(i, 3);
    c.message.at = matched.text(i, 4);
    c.bm25 = bm25(matched.text(i, 5), plan.terms, doc_rows, total, avg);
    out.candidates.push_back(std::move(c));
  }
  std::stable_sort(out.candidates.begin(), out.candidates.end(),
                   [](const auto& a, const auto& b) { return a.bm25 > b.bm25; });
  if (static_cast<int>(out.candidates.size()) > limit) out.candidates.resize(limit);
  return out;
}

std::vector<common::Message> PgSearchIndex::neighbours(const std::string& chat_id, int64_t id,
                                                       int count, int64_t after_id,
                                                       int64_t before_id) {
  if (count <= 0) return {};
  check_deadline();
  std::vector<common::Message> out = pg_messages(c_.query(
      "SELECT id, role, text, created_at FROM history WHERE chat_id = $1 AND id < $2 AND id > $3 "
      "ORDER BY id DESC LIMIT $4",
      {param(chat_id), param(id), param(after_id), param(int64_t{count})}));
  std::reverse(out.begin(), out.end());
  for (common::Message& m : pg_messages(c_.query(
           "SELECT id, role, text, created_at FROM history WHERE chat_id = $1 AND id > $2 AND id "
           "< $3 ORDER BY id LIMIT $4",
           {param(chat_id), param(id), param(before_id), param(int64_t{count})})))
    out.push_back(std::move(m));
  return out;
}

void PgSearchIndex::set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) {
  deadline_ = deadline;
  if (deadline_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        *deadline_ - std::chrono::steady_clock::now());
    c_.exec(fmt::format("SET statement_timeout = {}", std::max<int64_t>(1, left.count())));
    timeout_set_ = true;
  } else if (timeout_set_) {
    c_.exec("RESET statement_timeout");  // the role's or server's own setting
    timeout_set_ = false;
  }
}

void PgSearchIndex::check_deadline() const {
  if (deadline_ && std::chrono::steady_clock::now() > *deadline_)
    throw std::runtime_error("search deadline passed");
}

// Embeddings ------------------------------------------------------------------------------------

std::vector<common::Message> PgSearchIndex::unembedded(const std::string& chat_id,
                                                       const std::string& model, int limit) {
  std::vector<common::Message> out = pg_messages(c_.query(
      "SELECT h.id, h.role, h.text, h.created_at FROM history_vectors v JOIN history h ON h.id = "
      "v.id WHERE v.chat_id = $1 AND v.model = $2 AND v.stale = 1 ORDER BY v.id LIMIT $3",
      {param(chat_id), param(model), param(int64_t{limit})}));
  if (static_cast<int>(out.size()) >= limit) return out;
  const int64_t through =
      c_.query("SELECT coalesce(max(id), 0) FROM history_vectors WHERE chat_id = $1 AND model = $2",
               {param(chat_id), param(model)})
          .int64(0, 0);
  for (common::Message& m : pg_messages(c_.query(
           "SELECT id, role, text, created_at FROM history WHERE chat_id = $1 AND id > $2 ORDER "
           "BY id LIMIT $3",
           {param(chat_id), param(through), param(int64_t{limit - static_cast<int>(out.size())})})))
    out.push_back(std::move(m));
  return out;
}

void PgSearchIndex::store_vectors(
    const std::string& chat_id, const std::string& model,
    const std::vector<std::pair<int64_t, std::vector<float>>>& vectors) {
  if (vectors.empty()) return;
  db::pg::Transaction tx(c_);
  for (const auto& [id, v] : vectors)
    c_.query(
        "INSERT INTO history_vectors(id, model, chat_id, vector, stale) VALUES ($1, $2, $3, "
        "$4::bytea, 0) ON CONFLICT (id, model) DO UPDATE SET chat_id = excluded.chat_id, vector "
        "= excluded.vector, stale = 0",
        {param(id), param(model), param(chat_id), hex_bytes(v)});
  tx.commit();
}

context::SearchResult PgSearchIndex::search_vectors(const std::string& chat_id,
                                                    const std::string& model,
                                                    const std::vector<float>& query,
                                                    int64_t after_id, int64_t before_id,
                                                    int limit) {
  context::SearchResult out;
  if (query.empty() || limit <= 0) return out;
  check_deadline();
  const db::pg::Result scan = c_.query(
      "SELECT id, vector FROM history_vectors WHERE chat_id = $1 AND model = $2 AND stale = 0 AND "
      "id > $3 AND id < $4 ORDER BY id DESC LIMIT $5",
      {param(chat_id), param(model), param(after_id), param(before_id),
       param(int64_t{kMaxVectorRows})});
  using Hit = std::pair<double, int64_t>;
  std::priority_queue<Hit, std::vector<Hit>, std::greater<>> best;  // worst on top
  for (int i = 0; i < scan.rows(); ++i) {
    // A vector of another size (the model's dimensions changed) is not comparable: skipped.
    const std::vector<float> v = floats(scan.text(i, 1), query.size());
    if (v.empty()) continue;
    double dot = 0;
    for (size_t k = 0; k < v.size(); ++k) dot += static_cast<double>(v[k]) * query[k];
    best.emplace(dot, scan.int64(i, 0));
    if (static_cast<int>(best.size()) > limit) best.pop();
  }
  std::vector<Hit> hits;
  for (; !best.empty(); best.pop()) hits.push_back(best.top());
  std::reverse(hits.begin(), hits.end());
  for (const auto& [score, id] : hits) {
    const db::pg::Result r = c_.query(
        "SELECT h.id, h.role, h.text, h.created_at, coalesce(t.terms, '') FROM history h LEFT "
        "JOIN history_terms t ON t.rowid = h.id WHERE h.id = $1 AND h.chat_id = $2",
        {param(id), param(chat_id)});
    if (r.rows() == 0) continue;  // deleted since
    context::Candidate c;
    c.message = pg_messages(r).front();
    c.terms = r.text(0, 4);
    c.cosine = score;
    out.candidates.push_back(std::move(c));
  }
  return out;
}

}  // namespace autonous::store
