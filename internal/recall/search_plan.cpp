#include "internal/recall/search_plan.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

#include <fmt/format.h>

namespace autonous::recall {
namespace {

double idf(double total, double doc) {
  return std::max(1e-6, std::log((total - doc + 0.5) / (doc + 0.5)));
}

}  // namespace

QueryPlan plan_query(const std::vector<std::string>& terms, double total, const std::string& chat,
                     const RowsWith& rows_with) {
  QueryPlan out;
  std::vector<std::string> unique;
  for (const std::string& t : terms)
    if (unique.size() < kMaxLookups && std::find(unique.begin(), unique.end(), t) == unique.end())
      unique.push_back(t);
  // Commonness is judged among the rows searched: the chat's (documents: all of them).
  const auto searched = static_cast<double>(rows_with(chat, ""));
  out.searched = searched;
  // A term in more than kCommonShare of them (at most kMaxTermRows) tells nothing apart.
  const auto common_rows =
      static_cast<int64_t>(std::min(kCommonShare * searched, static_cast<double>(kMaxTermRows)));
  struct Known {
    int64_t here;    // rows of the searched part holding it
    int64_t global;  // rows of the whole index holding it (BM25's IDF)
    std::string term;
    bool operator<(const Known& o) const { return here < o.here; }
  };
  std::vector<Known> known;
  for (const std::string& t : unique) {
    const int64_t here = rows_with(chat, t);
    if (here > 0) known.push_back({here, chat.empty() ? here : rows_with("", t), t});
  }
  std::stable_sort(known.begin(), known.end());
  int64_t postings = 0;
  for (const auto& [here, doc, term] : known) {  // rarest first
    // A common term tells nothing apart (and is slow to rank): a question made only of such
    // terms searches nothing.
    const bool common = searched >= kMinRowsForCommon && here > common_rows;
    // BM25 ranks every row any term matches: past kMaxPostings rows in all, the less rare terms
    // stay out (the rarest always searches).
    const bool over = !out.terms.empty() && postings + doc > kMaxPostings;
    if (common || over || out.terms.size() >= kMaxQueryTerms) break;
    postings += doc;
    out.foreign += doc - here;
    out.terms.push_back(term);
    out.rows.push_back(here);
    out.idf += idf(total, static_cast<double>(doc));
  }
  // Every term is common, yet a row holding several of them may be rare (as far as the two
  // rarest, were they independent, say): the rarest two together.
  if (out.terms.empty() && known.size() >= 2 && known[0].global <= kMaxAndTermRows &&
      known[1].global <= kMaxAndTermRows &&
      static_cast<double>(known[0].here) * static_cast<double>(known[1].here) /
              std::max(searched, 1.0) <=
          static_cast<double>(common_rows)) {
    out.all = true;
    for (size_t i = 0; i < 2; ++i) {
      out.terms.push_back(known[i].term);
      out.rows.push_back(known[i].here);
      out.foreign += known[i].global - known[i].here;
      out.idf += idf(total, static_cast<double>(known[i].global));
    }
  }
  return out;
}

double bm25(const std::string& row_terms, const std::vector<std::string>& terms,
            const std::vector<int64_t>& doc_rows, double total, double avg_terms) {
  constexpr double kK1 = 1.2;
  constexpr double kB = 0.75;
  std::vector<int64_t> freq(terms.size(), 0);
  int64_t length = 0;
  const std::string_view all(row_terms);
  for (size_t at = 0; at < all.size();) {
    const size_t end = std::min(all.find(' ', at), all.size());
    if (end > at) {
      ++length;
      const std::string_view t = all.substr(at, end - at);
      for (size_t i = 0; i < terms.size(); ++i)
        if (t == terms[i]) ++freq[i];
    }
    at = end + 1;
  }
  const double norm = kK1 * (1 - kB + kB * static_cast<double>(length) / std::max(avg_terms, 1.0));
  double score = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (freq[i] == 0) continue;
    const auto f = static_cast<double>(freq[i]);
    score += idf(total, static_cast<double>(doc_rows[i])) * f * (kK1 + 1) / (f + norm);
  }
  return score;
}

std::string chat_token(const std::string& chat_id) {
  uint64_t h = 1469598103934665603ULL;
  for (const unsigned char c : chat_id) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("c{:016x}", h);
}

void count_terms(const std::string& chat, const std::string& terms, int64_t sign,
                 TermCounts& counts) {
  std::set<std::string_view> seen;
  const std::string_view all(terms);
  size_t at = 0;
  while (at < all.size()) {
    const size_t end = std::min(all.find(' ', at), all.size());
    if (end > at) seen.insert(all.substr(at, end - at));
    at = end + 1;
  }
  for (const std::string_view t : seen) {
    counts[{std::string(), std::string(t)}] += sign;
    counts[{chat, std::string(t)}] += sign;
  }
  counts[{chat, std::string()}] += sign;
  counts[{std::string(), std::string()}] += sign;  // all rows of the source
}

int64_t index_within(const IndexQueued& index_queued, const std::optional<std::string>& chat_id,
                     std::chrono::steady_clock::time_point until) {
  int64_t total = 0;
  for (const std::string source : {"history", "document"}) {
    // Documents are for every chat: any of them.
    const std::optional<std::string> chat = source == "history" ? chat_id : std::nullopt;
    int64_t n = 0;
    do {
      n = index_queued(source, chat, kTimedBatch, until);
      total += n;
    } while (n == kTimedBatch && std::chrono::steady_clock::now() < until);
    if (std::chrono::steady_clock::now() >= until) break;
  }
  return total;
}

int64_t index_all(const IndexQueued& index_queued) {
  int64_t total = 0;
  for (const std::string source : {"history", "document"}) {
    int64_t n = 0;
    do {
      n = index_queued(source, std::nullopt, kBatch, std::nullopt);
      total += n;
    } while (n == kBatch);
  }
  return total;
}

}  // namespace autonous::recall
