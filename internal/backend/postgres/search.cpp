#include "internal/backend/postgres/search.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <queue>
#include <stdexcept>
#include <utility>

#include "internal/backend/postgres/connection.h"
#include "internal/recall/search_plan.h"
#include "internal/recall/search_terms.h"

namespace autonous::store {
namespace {

using db::pg::param;

// The terms column as a tsvector: the expression migrations/postgres/0007 indexes.
constexpr const char* kTermsVector =
    "array_to_tsvector(array_remove(string_to_array(terms, ' '), ''))";

double term_count(const std::string& terms) {
  return static_cast<double>(std::count(terms.begin(), terms.end(), ' ') + 1);
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

PgSearchIndex::Planned PgSearchIndex::planned(const std::string& source, const std::string& chat,
                                              const std::vector<std::string>& terms) {
  // Every count the plan may ask for, in one statement: each term's (and "": all rows) overall
  // count with the deltas not folded yet, and its count in `chat`.
  std::vector<db::pg::Param> keys{std::string()};
  for (const std::string& t : terms)
    if (std::find(keys.begin(), keys.end(), db::pg::Param(t)) == keys.end()) keys.push_back(t);
  const db::pg::Result r = c_.query(
      "SELECT k.term, coalesce((SELECT rows FROM search_term_rows WHERE source = $1 AND chat = '' "
      "AND term = k.term), 0) + coalesce((SELECT sum(rows) FROM search_term_deltas WHERE source "
      "= $1 AND term = k.term), 0), coalesce((SELECT rows FROM search_term_rows WHERE source = "
      "$1 AND chat = $2 AND term = k.term), 0) FROM unnest($3::text[]) AS k(term)",
      {param(source), param(chat), db::pg::array_literal(keys)});
  std::map<std::string, int64_t> overall, in_chat;
  for (int i = 0; i < r.rows(); ++i) {
    overall[r.text(i, 0)] = r.int64(i, 1);
    in_chat[r.text(i, 0)] = r.int64(i, 2);
  }
  const auto rows = [&](const std::string& c, const std::string& t) {
    const auto& known = c.empty() ? overall : in_chat;
    const auto it = known.find(t);
    if ((c.empty() || c == chat) && it != known.end()) return it->second;
    return rows_with(source, c, t);
  };
  Planned p;
  p.total = static_cast<double>(rows("", ""));
  p.plan = recall::plan_query(terms, p.total, chat, rows);
  for (const std::string& t : p.plan.terms) p.doc_rows.push_back(rows("", t));
  return p;
}

void PgSearchIndex::rank(std::vector<recall::Candidate>& candidates,
                         const std::vector<std::string>& row_terms, const Planned& p, int limit) {
  double length = 0;
  for (const std::string& t : row_terms) length += term_count(t);
  const double avg = row_terms.empty() ? 1.0 : length / static_cast<double>(row_terms.size());
  for (size_t i = 0; i < candidates.size(); ++i)
    candidates[i].bm25 = recall::bm25(row_terms[i], p.plan.terms, p.doc_rows, p.total, avg);
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto& a, const auto& b) { return a.bm25 > b.bm25; });
  if (static_cast<int>(candidates.size()) > limit) candidates.resize(static_cast<size_t>(limit));
}

recall::SearchResult PgSearchIndex::search_history(const std::string& chat_id,
                                                   const std::vector<std::string>& terms,
                                                   int64_t after_id, int64_t before_id, int limit) {
  check_deadline();
  recall::SearchResult out;
  const std::string token = recall::chat_token(chat_id);
  const Planned p = planned("history", token, terms);
  out.terms = p.plan.terms;
  out.term_rows = p.plan.rows;
  out.searched_rows = p.plan.searched;
  out.query_idf = p.plan.idf;
  if (p.plan.terms.empty() || limit <= 0) return out;
  const db::pg::Result matched = c_.query(
      std::string("SELECT t.rowid, t.terms, h.role, h.text, h.created_at FROM history_terms t "
                  "JOIN history h ON h.id = t.rowid WHERE ") +
          kTermsVector +
          " @@ $1::tsquery AND t.chat = $2 AND t.rowid > $3 AND t.rowid < $4 "
          "AND h.chat_id = $5 ORDER BY t.rowid DESC LIMIT $6",
      {ts_query(p.plan.terms, p.plan.all), param(token), param(after_id), param(before_id),
       param(chat_id), param(recall::kMaxPostings + recall::kMaxForeignRows)});
  std::vector<std::string> row_terms;
  for (int i = 0; i < matched.rows(); ++i) {
    recall::Candidate c;
    c.message.history_id = matched.int64(i, 0);
    c.terms = matched.text(i, 1);
    c.message.role = common::parse_role(matched.text(i, 2)).value_or(common::Role::kUser);
    c.message.content = matched.text(i, 3);
    c.message.at = matched.text(i, 4);
    row_terms.push_back(c.terms);
    out.candidates.push_back(std::move(c));
  }
  rank(out.candidates, row_terms, p, limit);
  return out;
}

recall::SearchResult PgSearchIndex::search_documents(const std::string& chat_id,
                                                     const std::vector<std::string>& terms,
                                                     int limit) {
  check_deadline();
  recall::SearchResult out;
  // The catch-up just before found no document indexed or queued: nothing to plan or match.
  if (std::exchange(documents_found_, std::nullopt) == false) return out;
  const Planned p = planned("document", "", terms);
  out.terms = p.plan.terms;
  out.term_rows = p.plan.rows;
  out.searched_rows = p.plan.searched;
  out.query_idf = p.plan.idf;
  if (p.plan.terms.empty() || limit <= 0) return out;
  const db::pg::Result matched = c_.query(
      std::string("SELECT d.id, d.title, d.text, coalesce(d.source, ''), d.created_at, t.terms "
                  "FROM document_terms t JOIN documents d ON d.id = t.rowid WHERE ") +
          kTermsVector +
          " @@ $1::tsquery AND (d.chat_id IS NULL OR d.chat_id = $2) ORDER BY d.id DESC LIMIT $3",
      {ts_query(p.plan.terms, p.plan.all), param(chat_id), param(recall::kMaxPostings)});
  std::vector<std::string> row_terms;
  for (int i = 0; i < matched.rows(); ++i) {
    recall::Candidate c;
    c.document = true;
    c.message.history_id = matched.int64(i, 0);
    c.title = matched.text(i, 1);
    c.message.content = matched.text(i, 2);
    c.source = matched.text(i, 3);
    c.message.at = matched.text(i, 4);
    row_terms.push_back(matched.text(i, 5));
    out.candidates.push_back(std::move(c));
  }
  rank(out.candidates, row_terms, p, limit);
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
  c_.set_deadline(deadline);  // each read ends by it on the server too (cancelled past it)
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

recall::SearchResult PgSearchIndex::search_vectors(const std::string& chat_id,
                                                   const std::string& model,
                                                   const std::vector<float>& query,
                                                   int64_t after_id, int64_t before_id, int limit) {
  recall::SearchResult out;
  if (query.empty() || limit <= 0) return out;
  check_deadline();
  const db::pg::Result scan = c_.query(
      "SELECT id, vector FROM history_vectors WHERE chat_id = $1 AND model = $2 AND stale = 0 AND "
      "id > $3 AND id < $4 ORDER BY id DESC LIMIT $5",
      {param(chat_id), param(model), param(after_id), param(before_id),
       param(int64_t{recall::kMaxVectorRows})});
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
    recall::Candidate c;
    c.message = pg_messages(r).front();
    c.terms = r.text(0, 4);
    c.cosine = score;
    out.candidates.push_back(std::move(c));
  }
  return out;
}

}  // namespace autonous::store
