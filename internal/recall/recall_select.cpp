#include "internal/recall/recall_select.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string_view>

#include "internal/recall/search_terms.h"

namespace autonous::recall {
namespace {

// A candidate's distinct terms as sorted hashes: set operations by merging, no string compares
// (a collision only makes two terms count as one, rare and harmless for a similarity).
using TermSet = std::vector<uint64_t>;

uint64_t hash_of(std::string_view term) { return std::hash<std::string_view>{}(term); }

bool contains(const TermSet& set, std::string_view term) {
  return std::binary_search(set.begin(), set.end(), hash_of(term));
}

double jaccard(const TermSet& a, const TermSet& b) {
  if (a.empty() && b.empty()) return 0;
  size_t common = 0;
  for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end();) {
    if (*i < *j) {
      ++i;
    } else if (*j < *i) {
      ++j;
    } else {
      ++common;
      ++i;
      ++j;
    }
  }
  return static_cast<double>(common) / static_cast<double>(a.size() + b.size() - common);
}

// The query terms a candidate contains: its "fact signature".
std::string signature(const TermSet& terms, const std::vector<std::string>& query) {
  std::string out;
  for (const std::string& q : query)
    if (contains(terms, q)) out += q + ' ';
  return out;
}

// The candidate's terms: as the index stored them, or analysed now.
TermSet term_set(const Candidate& c) {
  TermSet out;
  if (c.terms.empty()) {
    for (const std::string& t : search_terms(c.message.content)) out.push_back(hash_of(t));
  } else {
    const std::string_view all(c.terms);
    size_t at = 0;
    while (at < all.size()) {
      const size_t end = std::min(all.find(' ', at), all.size());
      if (end > at) out.push_back(hash_of(all.substr(at, end - at)));
      at = end + 1;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Which of the query's terms a candidate holds, one bit each (the query has at most 64).
uint64_t matched_mask(const TermSet& terms, const std::vector<std::string>& query) {
  uint64_t mask = 0;
  for (size_t i = 0; i < query.size() && i < 64; ++i)
    if (contains(terms, query[i])) mask |= uint64_t{1} << i;
  return mask;
}

// The relevance gate: a full-text match becomes evidence only when what it shares with the
// question is rare enough to be about the same thing. At least one matched term is uncommon (in
// at most kUncommonShare of the searched rows), and the matched terms together are specific: in
// at most kSpecificShare of them, by the larger of two counts, the rows expected to hold them all
// were they independent, and the candidates that do hold them all (`together`; words of small
// talk come together: "haha nice" in every "haha nice"). Small talk shares only such words with
// earlier small talk and recalls nothing; a question naming its subject (a locker code, an order
// number, a sister's name) does.
bool speaks(uint64_t mask, int64_t together, const SearchResult& r) {
  if (r.terms.empty() || r.term_rows.size() != r.terms.size()) return true;  // no counts: no gate
  const double searched = std::max(r.searched_rows, 1.0);
  const double uncommon = std::max(kMinUncommonRows, kUncommonShare * searched);
  const double specific = std::max(kMinSpecificRows, kSpecificShare * searched);
  bool any_uncommon = false;
  double joint = searched;
  for (size_t i = 0; i < r.terms.size() && i < 64; ++i) {
    if ((mask & (uint64_t{1} << i)) == 0) continue;
    const double rows = std::max<double>(static_cast<double>(r.term_rows[i]), 1.0);
    any_uncommon = any_uncommon || rows <= uncommon;
    joint *= rows / searched;
  }
  joint = std::max(joint, static_cast<double>(together));
  return mask != 0 && any_uncommon && joint <= specific;
}

// Each candidate's terms into `own_terms`, and whether it passes the gate: a vector hit speaks
// for itself; a full-text one must speak (counted against the candidates that hold all of its
// matched terms).
std::vector<char> gate(const SearchResult& result, std::vector<TermSet>& own_terms) {
  std::vector<uint64_t> masks;
  for (const Candidate& c : result.candidates) {
    own_terms.push_back(term_set(c));
    masks.push_back(matched_mask(own_terms.back(), result.terms));
  }
  std::vector<char> admitted(result.candidates.size(), 1);
  for (size_t k = 0; k < result.candidates.size(); ++k) {
    if (result.candidates[k].semantic_rank != 0) continue;
    const int64_t together = std::count_if(masks.begin(), masks.end(),
                                           [&](uint64_t m) { return (m & masks[k]) == masks[k]; });
    admitted[k] = speaks(masks[k], together, result) ? 1 : 0;
  }
  return admitted;
}

bool newer(const Scored& a, const Scored& b) {
  return a.candidate.message.history_id > b.candidate.message.history_id;
}

// Each group of candidates that match the same query terms: the newest gets the group's best
// score.
void favour_updates(std::vector<Scored>& scored, const std::vector<TermSet>& terms,
                    const std::vector<std::string>& query) {
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < scored.size(); ++i) {
    // A candidate matching no query term (found by its vector) is no version of a fact.
    std::string sig = signature(terms[i], query);
    if (!scored[i].candidate.document && !sig.empty()) groups[std::move(sig)].push_back(i);
  }
  for (const auto& [sig, members] : groups) {
    if (members.size() < 2) continue;
    size_t newest = members.front();
    double best = 0;
    for (const size_t i : members) {
      best = std::max(best, scored[i].score);
      if (newer(scored[i], scored[newest])) newest = i;
    }
    scored[newest].score = best;
  }
}

}  // namespace

std::optional<double> parse_time(const std::string& at) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  double s = 0;
  char sep = 0;
  if (std::sscanf(at.c_str(), "%4d-%2d-%2d%c%2d:%2d:%lf", &y, &mo, &d, &sep, &h, &mi, &s) != 7)
    return std::nullopt;
  if ((sep != 'T' && sep != ' ') || mo < 1 || mo > 12 || d < 1 || d > 31) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year{y},
                                        std::chrono::month{static_cast<unsigned>(mo)},
                                        std::chrono::day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return std::nullopt;
  const auto days = std::chrono::sys_days(ymd).time_since_epoch().count();
  return static_cast<double>(days) * 86400.0 + h * 3600.0 + mi * 60.0 + s;
}

SearchResult fuse(SearchResult lexical, const SearchResult& semantic,
                  const RecallSettings& settings) {
  if (semantic.candidates.empty()) return lexical;
  std::vector<Candidate> merged;
  auto add = [&](const Candidate& c, int rank, bool is_lexical) {
    auto it = std::find_if(merged.begin(), merged.end(), [&](const Candidate& m) {
      return m.document == c.document && m.message.history_id == c.message.history_id;
    });
    if (it == merged.end()) it = merged.insert(merged.end(), c);
    (is_lexical ? it->lexical_rank : it->semantic_rank) = rank;
    if (!is_lexical) it->cosine = c.cosine;
  };
  int rank = 0;
  for (const Candidate& c : lexical.candidates)
    if (lexical.query_idf > 0 && c.bm25 / lexical.query_idf >= settings.min_relevance)
      add(c, ++rank, true);
  rank = 0;
  for (const Candidate& c : semantic.candidates)
    if (c.cosine >= settings.min_similarity) add(c, ++rank, false);
  const double best = 2 / (kRrfK + 1);
  for (Candidate& c : merged) {
    double sum = 0;
    if (c.lexical_rank > 0) sum += 1 / (kRrfK + c.lexical_rank);
    if (c.semantic_rank > 0) sum += 1 / (kRrfK + c.semantic_rank);
    c.fused = sum / best;
  }
  std::stable_sort(merged.begin(), merged.end(),
                   [](const Candidate& a, const Candidate& b) { return *a.fused > *b.fused; });
  lexical.candidates = std::move(merged);
  return lexical;
}

std::vector<Scored> select_candidates(const SearchResult& result, std::optional<double> reference,
                                      const RecallSettings& settings) {
  std::vector<Scored> scored;
  std::vector<TermSet> terms;
  const double weight = std::clamp(settings.relevance_weight, 0.0, 1.0);
  const double tau = std::max(settings.recency_days, 1e-6) * 86400.0;
  // Without a reference, ages count from the newest candidate.
  if (!reference)
    for (const Candidate& c : result.candidates)
      if (const std::optional<double> at = parse_time(c.message.at))
        reference = reference ? std::max(*reference, *at) : *at;
  std::vector<TermSet> own_terms;
  const std::vector<char> admitted = gate(result, own_terms);
  for (size_t k = 0; k < result.candidates.size(); ++k) {
    const Candidate& c = result.candidates[k];
    Scored s{c, 0, 1, 0};
    s.relevance = c.fused                ? *c.fused
                  : result.query_idf > 0 ? std::min(1.0, c.bm25 / result.query_idf)
                                         : 0;
    if ((!c.fused && s.relevance < settings.min_relevance) || admitted[k] == 0) continue;
    // A time that cannot be read counts as neither old nor new; documents do not age.
    const std::optional<double> at = parse_time(c.message.at);
    if (c.document)
      s.recency = 1;
    else if (!reference || !at)
      s.recency = 0.5;
    else
      s.recency = std::exp(-std::max(0.0, *reference - *at) / tau);
    s.score = weight * s.relevance + (1 - weight) * s.recency;
    scored.push_back(std::move(s));
    terms.push_back(std::move(own_terms[k]));
  }
  favour_updates(scored, terms, result.terms);
  // Only the best few are worth the diversity step.
  const auto pool = static_cast<size_t>(std::max(3 * settings.max_hits, 12));
  if (scored.size() > pool) {
    std::vector<size_t> order(scored.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return scored[a].score > scored[b].score ||
             (scored[a].score == scored[b].score && newer(scored[a], scored[b]));
    });
    order.resize(pool);
    std::vector<Scored> s2;
    std::vector<TermSet> t2;
    for (const size_t i : order) {
      s2.push_back(std::move(scored[i]));
      t2.push_back(std::move(terms[i]));
    }
    scored = std::move(s2);
    terms = std::move(t2);
  }

  // MMR, ties to the newer message. similar[i]: the most like any chosen one so far.
  std::vector<Scored> chosen;
  std::vector<bool> taken(scored.size(), false);
  std::vector<double> similar(scored.size(), 0);
  const auto limit = static_cast<size_t>(std::max(settings.max_hits, 0));
  while (chosen.size() < limit) {
    std::optional<size_t> best;
    double best_value = 0;
    for (size_t i = 0; i < scored.size(); ++i) {
      if (taken[i]) continue;
      const double value = kMmrLambda * scored[i].score - (1 - kMmrLambda) * similar[i];
      if (!best || value > best_value || (value == best_value && newer(scored[i], scored[*best]))) {
        best = i;
        best_value = value;
      }
    }
    if (!best) break;
    taken[*best] = true;
    chosen.push_back(scored[*best]);
    for (size_t i = 0; i < scored.size(); ++i)
      if (!taken[i]) similar[i] = std::max(similar[i], jaccard(terms[i], terms[*best]));
  }
  return chosen;
}

}  // namespace autonous::recall
