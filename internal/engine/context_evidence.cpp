#include "internal/engine/context_evidence.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "internal/engine/allocator.h"
#include "internal/engine/context_cut.h"
#include "internal/tokens/token_counter.h"

namespace autonous::engine {

int64_t plan_reserve(const EvidenceSeams& seams, const Verbatim& v, const Ends& ends,
                     bool will_fold, bool summarize) {
  AllocationInput alloc;
  alloc.budget = ends.budget_tokens;
  alloc.fixed = ends.fixed_tokens;
  // A conversation past kLongTermTurns turns (or one whose older messages already left the
  // prompt, or with a summary) shifts share from the recent history to long-term memory; a
  // shorter one keeps all of it recent (evidence, such as documents, still takes whatever room
  // the prompt leaves).
  alloc.long_term = v.full || v.summary.has_value() || v.older ||
                    v.rows.messages.size() > static_cast<size_t>(2 * kLongTermTurns);
  alloc.summary =
      summarize ? summary_room(v, will_fold, seams.settings.summary.max_tokens, seams.counter) : 0;
  alloc.recall = seams.settings.recall;
  alloc.recall.enabled = seams.enabled();
  return evidence_reserve(alloc);
}

int64_t search_below(const Verbatim& v, std::optional<int64_t> first_kept,
                     int64_t cleared_through) {
  const std::vector<common::Message>& rows = v.rows.messages;
  if (v.whole && (rows.empty() || first_kept == rows.front().history_id))
    return cleared_through + 1;
  if (first_kept) return *first_kept;
  return rows.empty() ? std::numeric_limits<int64_t>::max() : rows.back().history_id + 1;
}

int64_t probe_evidence(const EvidenceSeams& seams, const std::string& chat_id,
                       int64_t cleared_through, const Verbatim& v, size_t first, const Ends& ends,
                       int64_t reserve) {
  if (!seams.enabled()) return 0;
  if (seams.embedder != nullptr || ends.query.empty() || ends.user_truncated ||
      first >= v.rows.messages.size())
    return reserve;
  recall::RecallQuery q;
  q.chat_id = chat_id;
  q.text = ends.query;
  q.after_id = cleared_through;
  q.before_id = search_below(v, v.rows.messages[first].history_id, cleared_through);
  q.reference = recall::parse_time(v.rows.messages.back().at);
  q.room = reserve;
  try {
    seams.searcher->catch_up(chat_id);
    const recall::Evidence ev =
        recall::gather_evidence(*seams.searcher, q, seams.settings.recall, seams.counter);
    for (const recall::GathererRun& run : ev.runs)
      if (run.error) return reserve;  // unknown: the plan keeps its room
    return ev.text.empty() ? 0 : std::min(reserve, seams.counter.count_text(ev.text) + 2);
  } catch (const std::exception&) {
    return reserve;  // add_evidence says what failed
  }
}

EvidenceStep add_evidence(const EvidenceSeams& seams, const std::string& chat_id,
                          int64_t cleared_through, const std::vector<common::Message>& kept,
                          int64_t before_id, const Ends& ends, bool user_truncated,
                          Prompt& prompt) {
  EvidenceStep out;
  if (!seams.enabled() || prompt.messages.empty() ||
      prompt.messages.back().role != common::Role::kUser || ends.query.empty() || user_truncated)
    return out;
  recall::RecallQuery q;
  q.chat_id = chat_id;
  q.text = ends.query;
  q.after_id = cleared_through;
  q.before_id = before_id;
  if (!kept.empty()) q.reference = recall::parse_time(kept.back().at);
  try {
    seams.searcher->catch_up(chat_id);
  } catch (const std::exception& e) {
    out.warnings.push_back({"gatherer_failed", std::string("search index: ") + e.what()});
    return out;
  }
  std::optional<recall::GathererRun> embedded;
  if (seams.embedder != nullptr) embedded = embed_question(seams, q, out.warnings);
  const bool head = seams.settings.layout == Layout::kSectioned;
  // Twice at most: the block's cost is an upper bound, but the joined message is recounted.
  for (int attempt = 0; attempt < 2; ++attempt) {
    q.room = prompt.budget - prompt.tokens - attempt * 16;
    recall::Evidence ev =
        recall::gather_evidence(*seams.searcher, q, seams.settings.recall, seams.counter);
    if (embedded) ev.runs.insert(ev.runs.begin(), *embedded);
    if (attempt == 0)
      for (const recall::GathererRun& run : ev.runs)
        if (run.error && run.name != "embeddings")
          out.warnings.push_back({"gatherer_failed", fmt::format("{}: {} (it contributed nothing)",
                                                                 run.name, *run.error)});
    if (ev.text.empty()) {
      out.evidence = std::move(ev);
      return out;
    }
    std::string block = ev.text;
    while (!block.empty() && block.back() == '\n') block.pop_back();
    const std::optional<int64_t> added = join_into_user(prompt, ends, head, block, seams.counter);
    if (!added) continue;
    ev.tokens = *added;  // exactly what the evidence added
    out.evidence = std::move(ev);
    return out;
  }
  return out;
}

}  // namespace autonous::engine
