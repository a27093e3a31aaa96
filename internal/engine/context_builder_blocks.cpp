// ContextBuilder, the block steps: pinned facts into the system message, the evidence reserve,
// recall's evidence before the user's text, and the description of the finished prompt's blocks.

#include <algorithm>
#include <array>
#include <limits>

#include <fmt/format.h>

#include "internal/common/sha256.h"
#include "internal/common/text.h"
#include "internal/common/utf8.h"
#include "internal/engine/allocator.h"
#include "internal/engine/assembler.h"
#include "internal/engine/context_builder.h"
#include "internal/engine/summary_compactor.h"
#include "internal/tokens/token_counter.h"
#include "internal/tokens/truncate.h"

namespace autonous::engine {
namespace {

// The sectioned layout's evidence head (the others: context_ends.h).
constexpr std::string_view kEvidenceSection = "\n\n[Evidence]\n";

// The summary leads the first kept user message (or the new one): data in the user's turn, and
// the roles still alternate as strict chat templates require.
void place_summary(const std::optional<Summary>& summary, std::vector<common::Message>& kept,
                   common::Message& user) {
  if (!summary) return;
  common::Message& lead = kept.empty() ? user : kept.front();
  lead.content.insert(0, summary_block(summary->text));
}

}  // namespace

void ContextBuilder::take_summary(Verbatim& v, BuiltContext& out) const {
  if (!v.summary) return;
  if (v.summary_tokens > out.figures.history_budget_tokens) {
    // MustFit first: a summary that does not fit this budget stays out of this prompt.
    out.warnings.push_back({"summary_dropped", fmt::format("the summary ({} tokens) does not fit "
                                                           "the budget",
                                                           v.summary_tokens)});
    return;
  }
  out.summary.used = true;
  out.summary.id = v.summary->id;
  out.summary.tokens = v.summary_tokens;
  out.summary.pending = out.summarized ? 0 : out.summary.pending;
}

int64_t ContextBuilder::summary_room(const Verbatim& v, bool will_fold) const {
  return will_fold ? std::max(v.summary_tokens,
                              summary_block_tokens("", counter_) + settings_.summary.max_tokens)
                   : v.summary_tokens;
}

int64_t ContextBuilder::allocate(const Verbatim& v, const Ends& ends, bool will_fold,
                                 bool summarize) const {
  AllocationInput alloc;
  alloc.budget = ends.budget_tokens;
  alloc.fixed = ends.fixed_tokens;
  // A conversation past kLongTermTurns turns (or one whose older messages already left the
  // prompt, or with a summary) shifts share from the
  // recent history to long-term memory; a shorter one keeps all of it recent (evidence, such as
  // documents, still takes whatever room the prompt leaves).
  alloc.long_term = v.full || v.summary.has_value() || v.older ||
                    v.rows.messages.size() > static_cast<size_t>(2 * kLongTermTurns);
  alloc.summary = summarize ? summary_room(v, will_fold) : 0;
  alloc.recall = settings_.recall;
  alloc.recall.enabled = settings_.recall.enabled && searcher_ != nullptr;
  return evidence_reserve(alloc);
}

int64_t ContextBuilder::probe_evidence(const std::string& chat_id, const Verbatim& v, size_t first,
                                       const Ends& ends, const BuiltContext& out) const {
  const int64_t reserve = out.evidence_reserve;
  if (searcher_ == nullptr || embedder_ != nullptr || !settings_.recall.enabled ||
      ends.query.empty() || ends.user_truncated || first >= v.rows.messages.size())
    return searcher_ == nullptr || !settings_.recall.enabled ? 0 : reserve;
  recall::RecallQuery q;
  q.chat_id = chat_id;
  q.text = ends.query;
  q.after_id = out.chat.cleared_through;
  q.before_id = v.rows.messages[first].history_id;
  q.reference = recall::parse_time(v.rows.messages.back().at);
  q.room = reserve;
  try {
    searcher_->catch_up(chat_id);
    const recall::Evidence ev = recall::gather_evidence(*searcher_, q, settings_.recall, counter_);
    for (const recall::GathererRun& run : ev.runs)
      if (run.error) return reserve;  // unknown: the plan keeps its room
    return ev.text.empty() ? 0 : std::min(reserve, counter_.count_text(ev.text) + 2);
  } catch (const std::exception&) {
    return reserve;  // add_evidence says what failed
  }
}

Prepared ContextBuilder::tail(const Prepared& rows, size_t first) {
  Prepared kept = rows;
  const auto n = static_cast<ptrdiff_t>(first);
  kept.messages.erase(kept.messages.begin(), kept.messages.begin() + n);
  kept.cost.erase(kept.cost.begin(), kept.cost.begin() + n);
  kept.cut.erase(kept.cut.begin(), kept.cut.begin() + n);
  kept.tokens = 0;
  for (const int64_t c : kept.cost) kept.tokens += c;
  return kept;
}

void ContextBuilder::finish(const std::string& chat_id, const Verbatim& v,
                            std::vector<common::Message> kept, int64_t history_tokens, Ends& ends,
                            BuiltContext& out) const {
  // Recall looks below the first kept message (or past everything read when none was kept).
  const int64_t before_id = !kept.empty()              ? kept.front().history_id
                            : !v.rows.messages.empty() ? v.rows.messages.back().history_id + 1
                                                       : std::numeric_limits<int64_t>::max();
  place_summary(out.summary.used ? v.summary : std::nullopt, kept, ends.user);
  out.messages = assembler_.assemble(ends.system, kept, ends.user);
  out.figures.estimated_tokens = counter_.count_prompt(out.messages);
  const auto started = std::chrono::steady_clock::now();
  add_evidence(chat_id, kept, before_id, ends, out);
  out.evidence_time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  add_custom(ends, out);
  describe_blocks(ends, kept, history_tokens, out);
  compute_delta(ends, kept, history_tokens, out);
}

void ContextBuilder::add_evidence(const std::string& chat_id,
                                  const std::vector<common::Message>& kept, int64_t before_id,
                                  const Ends& ends, BuiltContext& out) const {
  Figures& f = out.figures;
  if (searcher_ == nullptr || !settings_.recall.enabled || out.messages.empty() ||
      out.messages.back().role != common::Role::kUser || ends.query.empty() || f.user_truncated)
    return;
  recall::RecallQuery q;
  q.chat_id = chat_id;
  q.text = ends.query;
  q.after_id = out.chat.cleared_through;
  q.before_id = before_id;
  if (!kept.empty()) q.reference = recall::parse_time(kept.back().at);
  try {
    searcher_->catch_up(chat_id);
  } catch (const std::exception& e) {
    out.warnings.push_back({"gatherer_failed", std::string("search index: ") + e.what()});
    return;
  }
  std::optional<recall::GathererRun> embedded;
  if (embedder_ != nullptr) embedded = embed_question(q, out);
  // Twice at most: the block's cost is an upper bound, but the joined message is recounted.
  for (int attempt = 0; attempt < 2; ++attempt) {
    q.room = f.budget_tokens - f.estimated_tokens - attempt * 16;
    recall::Evidence ev = recall::gather_evidence(*searcher_, q, settings_.recall, counter_);
    if (embedded) ev.runs.insert(ev.runs.begin(), *embedded);
    if (attempt == 0)
      for (const recall::GathererRun& run : ev.runs)
        if (run.error && run.name != "embeddings")
          out.warnings.push_back({"gatherer_failed", fmt::format("{}: {} (it contributed nothing)",
                                                                 run.name, *run.error)});
    if (ev.text.empty()) {
      out.evidence = std::move(ev);
      return;
    }
    std::string block = ev.text;
    while (!block.empty() && block.back() == '\n') block.pop_back();
    const std::optional<int64_t> added =
        join_into_user(ends, settings_.layout == Layout::kSectioned, block, out);
    if (!added) continue;
    ev.tokens = *added;  // exactly what the evidence added
    out.evidence = std::move(ev);
    return;
  }
}

std::optional<int64_t> ContextBuilder::join_into_user(const Ends& ends, bool section_head,
                                                      const std::string& block,
                                                      BuiltContext& out) const {
  Figures& f = out.figures;
  common::Message& user = out.messages.back();
  common::Message with = user;
  with.content.insert(with.content.size() - ends.suffix,
                      (section_head ? std::string(kEvidenceSection) : std::string("\n\n")) + block);
  const int64_t total =
      f.estimated_tokens - counter_.count_message(user) + counter_.count_message(with);
  if (total > f.budget_tokens) return std::nullopt;
  user = std::move(with);
  const int64_t added = total - f.estimated_tokens;
  f.estimated_tokens = total;
  return added;
}

void ContextBuilder::add_custom(const Ends& ends, BuiltContext& out) const {
  const std::vector<CustomBlock>& blocks = out.chat.custom;
  Figures& f = out.figures;
  // A user message cut to fit carries none (as it carries no evidence): P4 gives way before P1.
  if (blocks.empty() || out.messages.empty() || out.messages.back().role != common::Role::kUser ||
      f.user_truncated)
    return;
  // Twice at most: the block's cost is an upper bound, but the joined message is recounted.
  for (int attempt = 0; attempt < 2; ++attempt) {
    CustomFit fit =
        fit_custom(blocks, f.budget_tokens - f.estimated_tokens - attempt * 16, counter_);
    if (fit.text.empty()) {
      fit.left_out = static_cast<int64_t>(blocks.size());
      out.custom = std::move(fit);
      break;
    }
    // Sectioned: under [Evidence] (its own head when no evidence came first).
    const bool head = settings_.layout == Layout::kSectioned && out.evidence.items.empty();
    const std::optional<int64_t> added = join_into_user(ends, head, fit.text, out);
    if (!added) {  // over by the recount: try again with less room
      out.custom = CustomFit{};
      out.custom.left_out = static_cast<int64_t>(blocks.size());
      continue;
    }
    fit.tokens = *added;
    out.custom = std::move(fit);
    break;
  }
  out.custom.text.clear();  // the prompt holds it
  if (out.custom.halved > 0 || out.custom.left_out > 0)
    out.warnings.push_back(
        {"custom_left_out", fmt::format("{} custom block(s) halved and {} left out of {}: the "
                                        "prompt left too little room",
                                        out.custom.halved, out.custom.left_out, blocks.size())});
}

void ContextBuilder::describe_blocks(const Ends& ends, const std::vector<common::Message>& kept,
                                     int64_t history_tokens, BuiltContext& out) const {
  out.blocks.clear();
  out.blocks.push_back({"system", 0, ends.system_tokens - ends.pinned_tokens, 1, true, {}});
  if (ends.pins > 0) out.blocks.push_back({"pinned", 1, ends.pinned_tokens, ends.pins, true, {}});
  if (out.summary.used)
    out.blocks.push_back({"summary", 3, out.summary.tokens, 1, true, {out.summary.id}});
  if (!kept.empty())
    out.blocks.push_back({"history",
                          3,
                          history_tokens,
                          static_cast<int64_t>(kept.size()),
                          true,
                          {kept.front().history_id, kept.back().history_id}});
  out.blocks.push_back({"user", 1, ends.user_tokens, 1, false, {}});
  // Recalled history ids (documents are listed in the event's recall.items, with their source).
  if (!out.evidence.items.empty()) {
    Block ev{"evidence", 2, out.evidence.tokens, static_cast<int64_t>(out.evidence.items.size()),
             false,      {}};
    for (const recall::RecallItem& item : out.evidence.items)
      if (!item.document) ev.ids.push_back(item.message.history_id);
    out.blocks.push_back(std::move(ev));
  }
  if (!out.custom.ids.empty())
    out.blocks.push_back({"custom", 4, out.custom.tokens,
                          static_cast<int64_t>(out.custom.ids.size()), false, out.custom.ids});
}

void ContextBuilder::compute_delta(const Ends& ends, const std::vector<common::Message>& kept,
                                   int64_t history_tokens, BuiltContext& out) const {
  Delta& d = out.delta;
  const std::string& system = ends.system.content;
  const size_t prompt_bytes = system.size() - ends.pins_bytes;
  d.records.push_back({"system",
                       common::sha256_hex(std::string_view(system).substr(0, prompt_bytes)),
                       ends.system_tokens - ends.pinned_tokens, 0});
  if (ends.pins > 0)
    d.records.push_back({"pinned",
                         common::sha256_hex(std::string_view(system).substr(prompt_bytes)),
                         ends.pinned_tokens, 0});
  if (out.summary.used)
    d.records.push_back({"summary", common::sha256_hex("summary " + std::to_string(out.summary.id)),
                         out.summary.tokens, 0});
  if (!kept.empty())
    d.records.push_back(
        {"history",
         common::sha256_hex("history from " + std::to_string(kept.front().history_id) + "\n" +
                            kept.front().content),
         history_tokens, kept.back().history_id});
  // A provider caches an exact prefix: the leading run of reused blocks (of the history, the
  // messages the last prompt already had).
  // A block counts as reused only in the same place: a block that appeared or went before it
  // moved it.
  static constexpr std::array<std::string_view, 4> kOrder = {"system", "pinned", "summary",
                                                             "history"};
  std::vector<BlockRecord> stored = out.chat.blocks;
  const auto rank = [](const std::string& name) {
    return std::find(kOrder.begin(), kOrder.end(), name) - kOrder.begin();
  };
  std::sort(stored.begin(), stored.end(), [&](const BlockRecord& a, const BlockRecord& b) {
    return rank(a.name) < rank(b.name);
  });
  bool run = true;
  for (size_t i = 0; i < d.records.size(); ++i) {
    const BlockRecord& r = d.records[i];
    const auto before = std::find_if(stored.begin(), stored.end(),
                                     [&](const BlockRecord& b) { return b.name == r.name; });
    const bool reused = before != stored.end() && before->sha256 == r.sha256 &&
                        static_cast<size_t>(before - stored.begin()) == i;
    (reused ? d.reused : d.changed).push_back(r.name);
    if (!reused || !run) {
      run = false;
      continue;
    }
    int64_t cached = r.tokens;
    if (r.name == "history")
      for (const common::Message& m : kept)
        if (m.history_id > before->through) cached -= counter_.count_message(m);
    d.predicted_cached_tokens += std::max<int64_t>(cached, 0);
  }
}

}  // namespace autonous::engine
