#pragma once
// An in-memory Searcher for the engine's tests: a message matches when it holds a query term
// (search_terms), scored by how many distinct query terms it holds (query_idf: their number).
// The SQLite FTS5 index has its own tests (tests/backend/search_conformance_test.cpp).

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "internal/recall/recall.h"
#include "internal/recall/search_terms.h"

namespace autonous::recall {

class MemorySearcher final : public Searcher {
 public:
  explicit MemorySearcher(const std::vector<common::Message>& history) : history_(history) {}

  void catch_up(const std::string& /*chat_id*/) override {
    ++catch_ups;
    if (fail_index) throw std::runtime_error("index unavailable");
  }
  SearchResult search_history(const std::string& /*chat_id*/, const std::vector<std::string>& terms,
                              int64_t after_id, int64_t before_id, int limit) override {
    ++history_searches;
    if (fail_history) throw std::runtime_error("history search failed");
    std::vector<Candidate> pool;
    for (const auto& m : history_)
      if (m.history_id > after_id && m.history_id < before_id)
        pool.push_back({m, 0, false, {}, {}, {}, 0, std::nullopt, 0, 0});
    return rank(pool, terms, limit);
  }
  SearchResult search_documents(const std::string& /*chat_id*/,
                                const std::vector<std::string>& terms, int limit) override {
    ++document_searches;
    return rank(documents, terms, limit);
  }
  std::vector<common::Message> neighbours(const std::string& /*chat_id*/, int64_t id, int count,
                                          int64_t after_id, int64_t before_id) override {
    std::vector<common::Message> out;
    for (const auto& m : history_)
      if (m.history_id != id && m.history_id > after_id && m.history_id < before_id &&
          std::abs(m.history_id - id) <= count)
        out.push_back(m);
    return out;
  }
  void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) override {
    if (deadline) ++deadlines;
  }
  // The vector search answers `semantic` (in range), whatever the query vector.
  SearchResult search_vectors(const std::string& /*chat_id*/, const std::string& /*model*/,
                              const std::vector<float>& query, int64_t after_id, int64_t before_id,
                              int limit) override {
    last_vector = query;
    SearchResult r;
    for (const Candidate& c : semantic)
      if (c.message.history_id > after_id && c.message.history_id < before_id &&
          static_cast<int>(r.candidates.size()) < limit)
        r.candidates.push_back(c);
    return r;
  }

  std::vector<Candidate> documents;
  std::vector<Candidate> semantic;
  std::vector<float> last_vector;
  bool fail_history = false;
  bool fail_index = false;
  int catch_ups = 0;
  int history_searches = 0;
  int document_searches = 0;
  int deadlines = 0;

 private:
  // Each text's terms, computed once (ICU is not free; the property test searches every turn).
  // (By id: a message's text never changes here.)
  const std::set<std::string>& terms_of(const common::Message& m) {
    const int64_t key = m.history_id;
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      const std::vector<std::string> t = search_terms(m.content);
      it = cache_.emplace(key, std::set<std::string>(t.begin(), t.end())).first;
    }
    return it->second;
  }
  static std::set<std::string> terms_now(const common::Message& m) {
    const std::vector<std::string> t = search_terms(m.content);
    return {t.begin(), t.end()};
  }
  SearchResult rank(const std::vector<Candidate>& pool, const std::vector<std::string>& terms,
                    int limit) {
    SearchResult r;
    const std::set<std::string> q(terms.begin(), terms.end());
    r.terms.assign(q.begin(), q.end());
    r.query_idf = static_cast<double>(q.size());
    for (Candidate c : pool) {
      const std::set<std::string> have = c.document ? terms_now(c.message) : terms_of(c.message);
      for (const std::string& w : q) c.bm25 += have.count(w) != 0 ? 1.0 : 0.0;
      if (c.bm25 > 0) r.candidates.push_back(std::move(c));
    }
    std::stable_sort(r.candidates.begin(), r.candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.bm25 > b.bm25; });
    if (static_cast<int>(r.candidates.size()) > limit)
      r.candidates.resize(static_cast<size_t>(limit));
    return r;
  }
  const std::vector<common::Message>& history_;
  std::map<int64_t, std::set<std::string>> cache_;
};

}  // namespace autonous::recall
