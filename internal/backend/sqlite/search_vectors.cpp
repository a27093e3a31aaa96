// SearchIndex's embeddings part (migration 0008) and the candidates' rows both searches read.
#include <algorithm>
#include <cstring>
#include <queue>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/backend/sqlite/search_index.h"
#include "internal/backend/sqlite/sqlite_provider.h"
#include "internal/backend/sqlite/statement_cache.h"
#include "internal/backend/sqlite/write_transaction.h"

namespace autonous::store {

std::vector<common::Message> SearchIndex::unembedded(const std::string& chat_id,
                                                     const std::string& model, int limit) {
  // Edited rows first (their vectors are stale), then the rows after the newest vector.
  auto stale = cache_->get(
      "SELECT h.id, h.role, h.text, h.created_at FROM history_vectors v INDEXED BY "
      "history_vectors_stale JOIN history h ON h.id = "
      "v.id WHERE v.chat_id = ? AND v.model = ? AND v.stale = 1 ORDER BY v.id LIMIT ?");
  stale->bind(1, chat_id);
  stale->bind(2, model);
  stale->bind(3, limit);
  std::vector<common::Message> out = read_messages(*stale);
  stale->reset();
  if (static_cast<int>(out.size()) >= limit) return out;
  // The newest vector's id first: a subquery in the range would not narrow the index walk.
  auto newest = cache_->get(
      "SELECT coalesce(max(id), 0) FROM history_vectors WHERE chat_id = ? AND model = ?");
  newest->bind(1, chat_id);
  newest->bind(2, model);
  const int64_t through = newest->executeStep() ? newest->getColumn(0).getInt64() : 0;
  newest->reset();
  auto fresh = cache_->get(
      "SELECT id, role, text, created_at FROM history INDEXED BY history_by_chat WHERE chat_id = "
      "? AND id > ? ORDER BY id LIMIT ?");
  fresh->bind(1, chat_id);
  fresh->bind(2, through);
  fresh->bind(3, limit - static_cast<int>(out.size()));
  for (common::Message& m : read_messages(*fresh)) out.push_back(std::move(m));
  fresh->reset();
  return out;
}

void SearchIndex::store_vectors(
    const std::string& chat_id, const std::string& model,
    const std::vector<std::pair<int64_t, std::vector<float>>>& vectors) {
  if (vectors.empty()) return;
  db::WriteTransaction tx(db_);
  auto put = cache_->get(
      "INSERT OR REPLACE INTO history_vectors(id, model, chat_id, vector, stale) VALUES (?, ?, ?, "
      "?, 0)");
  for (const auto& [id, v] : vectors) {
    put->bind(1, id);
    put->bind(2, model);
    put->bind(3, chat_id);
    // An empty vector (a refused input) is an empty blob, never NULL: it is skipped by size.
    static const float kNone = 0;
    put->bind(4, v.empty() ? &kNone : v.data(), static_cast<int>(v.size() * sizeof(float)));
    put->exec();
    put->reset();
  }
  tx.commit();
}

recall::SearchResult SearchIndex::search_vectors(const std::string& chat_id,
                                                 const std::string& model,
                                                 const std::vector<float>& query, int64_t after_id,
                                                 int64_t before_id, int limit) {
  recall::SearchResult out;
  if (query.empty() || limit <= 0) return out;
  auto scan = cache_->get(
      "SELECT id, vector FROM history_vectors INDEXED BY history_vectors_by_chat WHERE chat_id = ? "
      "AND model = ? AND stale = 0 AND id > ? AND id < ? ORDER BY id DESC LIMIT ?");
  scan->bind(1, chat_id);
  scan->bind(2, model);
  scan->bind(3, after_id);
  scan->bind(4, before_id);
  scan->bind(5, recall::kMaxVectorRows);
  // The best `limit` so far, worst on top.
  using Hit = std::pair<double, int64_t>;
  std::priority_queue<Hit, std::vector<Hit>, std::greater<>> best;
  std::vector<float> v(query.size());
  while (scan->executeStep()) {
    const SQLite::Column blob = scan->getColumn(1);
    // A vector of another size (the model's dimensions changed) is not comparable: skipped.
    if (static_cast<size_t>(blob.getBytes()) != query.size() * sizeof(float)) continue;
    std::memcpy(v.data(), blob.getBlob(), query.size() * sizeof(float));
    double dot = 0;
    for (size_t i = 0; i < v.size(); ++i) dot += static_cast<double>(v[i]) * query[i];
    best.emplace(dot, scan->getColumn(0).getInt64());
    if (static_cast<int>(best.size()) > limit) best.pop();
  }
  scan->reset();
  std::vector<std::pair<int64_t, double>> hits;
  for (; !best.empty(); best.pop()) hits.emplace_back(best.top().second, best.top().first);
  std::reverse(hits.begin(), hits.end());
  out.candidates = read_candidates(chat_id, hits, limit, true);
  return out;
}

std::vector<recall::Candidate> SearchIndex::read_candidates(
    const std::string& chat_id, const std::vector<std::pair<int64_t, double>>& hits, int limit,
    bool cosine) {
  std::vector<recall::Candidate> out;
  auto row =
      cache_->get("SELECT id, role, text, created_at FROM history WHERE id = ? AND chat_id = ?");
  // The winners' stored terms (the selection compares them; reading them for every match would
  // cost more).
  auto stored = cache_->get("SELECT terms FROM history_terms WHERE rowid = ?");
  for (const auto& [id, score] : hits) {
    if (static_cast<int>(out.size()) >= limit) break;
    row->bind(1, id);
    row->bind(2, chat_id);
    std::vector<common::Message> m = read_messages(*row);
    row->reset();
    if (m.empty()) continue;  // another chat's row, or a row deleted since
    recall::Candidate c;
    c.message = std::move(m.front());
    (cosine ? c.cosine : c.bm25) = score;
    stored->bind(1, id);
    if (stored->executeStep()) c.terms = stored->getColumn(0).getString();
    stored->reset();
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace autonous::store
