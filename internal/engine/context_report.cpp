#include "internal/engine/context_report.h"

#include <cassert>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/engine/model_presets.h"

namespace autonous::engine {
namespace {

using nlohmann::ordered_json;

double share(int64_t tokens, int64_t budget) {
  return budget > 0 ? static_cast<double>(tokens) / static_cast<double>(budget) : 0.0;
}

double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

std::string dump(const ordered_json& j, int indent = -1) {
  return j.dump(indent, ' ', false, ordered_json::error_handler_t::replace);
}

double round4(double v) { return std::round(v * 10000.0) / 10000.0; }

// Each block: name, tier, tokens, count, stable, ids.
ordered_json blocks(const BuiltContext& b) {
  ordered_json out = ordered_json::array();
  for (const Block& block : b.blocks)
    out.push_back({{"name", block.name},
                   {"tier", fmt::format("P{}", block.tier)},
                   {"tokens", block.tokens},
                   {"count", block.count},
                   {"stable", block.stable},
                   {"ids", block.ids}});
  return out;
}

// What recall searched for and chose, and why: each item's id, whether the search chose it (a
// hit) or it came as a hit's neighbour, and the hit's scores.
ordered_json recall(const BuiltContext& b) {
  const recall::Evidence& ev = b.evidence;
  ordered_json items = ordered_json::array();
  for (const recall::RecallItem& i : ev.items) {
    ordered_json item = {{"id", i.message.history_id},
                         {"source", i.document ? "document" : "history"}};
    if (!i.message.at.empty()) item["at"] = i.message.at;
    if (i.hit) {
      item["score"] = round4(i.score);
      item["relevance"] = round4(i.relevance);
      item["recency"] = round4(i.recency);
      // With embeddings: the rank in each fused list (0: not in it) and the similarity.
      if (i.lexical_rank > 0 || i.semantic_rank > 0)
        item["ranks"] = {{"bm25", i.lexical_rank}, {"vector", i.semantic_rank}};
      if (i.cosine) item["cosine"] = round4(*i.cosine);
    } else {
      item["neighbour_of"] = i.neighbour_of;
    }
    if (i.cut) item["cut"] = true;
    items.push_back(std::move(item));
  }
  ordered_json runs = ordered_json::array();
  for (const recall::GathererRun& r : ev.runs) {
    ordered_json run = {{"name", r.name}, {"us", r.time.count()}, {"candidates", r.candidates}};
    if (r.error) run["error"] = *r.error;
    runs.push_back(std::move(run));
  }
  return {{"terms", ev.terms},
          {"document_terms", ev.document_terms},
          {"items", std::move(items)},
          {"gatherers", std::move(runs)}};
}

// Tool results' ids in an event: {"count", "ids"}, the newest kListedIds of them.
constexpr size_t kListedIds = 32;
ordered_json newest_ids(const std::vector<std::string>& ids) {
  const size_t from = ids.size() > kListedIds ? ids.size() - kListedIds : 0;
  return {{"count", ids.size()},
          {"ids", std::vector<std::string>(ids.begin() + static_cast<ptrdiff_t>(from), ids.end())}};
}

ordered_json figures(const BuiltContext& b) {
  const Figures& f = b.figures;
  return {{"original_count", f.original_count},
          {"compressed_count", f.compressed_count},
          {"dropped_count", f.dropped_count},
          {"truncated_count", f.truncated_count},
          {"user_truncated", f.user_truncated},
          {"estimated_tokens", f.estimated_tokens},
          {"budget_tokens", f.budget_tokens},
          {"tools_tokens", f.tools_tokens},
          {"system_tokens", f.system_tokens},
          {"user_tokens", f.user_tokens},
          {"history_budget_tokens", f.history_budget_tokens},
          {"message_count", b.messages.size()},
          {"token_counter", f.counter},
          {"level", to_string(f.level)},
          {"strategy", to_string(b.chat.strategy)},
          {"requested_strategy", to_string(b.chat.requested_strategy)},
          {"tokens_before", f.tokens_before},
          {"tokens_after", f.estimated_tokens},
          {"usage_before", round3(share(f.tokens_before, f.budget_tokens))},
          {"usage_after", round3(share(f.estimated_tokens, f.budget_tokens))},
          {"rounds", f.rounds},
          {"cut_messages", f.cut_messages},
          {"tool_results_cleared", newest_ids(f.tool_results_cleared)},
          {"tool_results_cut", newest_ids(f.tool_results_cut)},
          {"hard_truncated", f.hard_truncated},
          {"summary_used", b.summary.used},
          {"summary_id", b.summary.id != 0 ? ordered_json(b.summary.id) : nullptr},
          {"summary_tokens", b.summary.tokens},
          {"summarized", b.summarized.has_value()},
          {"settings", b.chat.own_settings ? "chat" : "env"},
          {"cleared_through", b.chat.cleared_through},
          {"compaction", b.state.compaction == CompactionReason::kNone
                             ? ordered_json(nullptr)
                             : ordered_json(to_string(b.state.compaction))},
          {"verbatim_after", b.state.after.verbatim_after},
          {"cut_through", b.state.after.cut_through},
          {"compactions", b.state.after.compactions},
          {"summary_failures", b.state.after.summary_failures},
          {"summary_backoff", b.state.after.summary_skips},
          {"learned_budget", b.state.budget_cap ? ordered_json(*b.state.budget_cap) : nullptr},
          {"build_us", f.build_time.count()},
          {"evidence_tokens", b.evidence.tokens},
          {"evidence_reserve", b.evidence_reserve},
          {"evidence_us", b.evidence_time.count()},
          {"custom",
           {{"ids", b.custom.ids}, {"halved", b.custom.halved}, {"left_out", b.custom.left_out}}},
          {"blocks", blocks(b)},
          {"delta",
           {{"reused", b.delta.reused},
            {"changed", b.delta.changed},
            {"predicted_cached_tokens", b.delta.predicted_cached_tokens}}},
          {"recall", recall(b)}};
}

std::string level_sentence(const BuiltContext& b) {
  const Figures& f = b.figures;
  const double before = share(f.tokens_before, f.budget_tokens);
  const Thresholds& t = b.chat.policy.thresholds;
  switch (f.level) {
    case Level::kNone:
      return fmt::format("none: usage {:.2f} of {} tokens; nothing cut or dropped", before,
                         f.budget_tokens);
    case Level::kNormal:
      return fmt::format(
          "normal: cut {} oversized message(s) (up to history id {}, or every one after a "
          "compaction for tokens), head and tail kept; usage {:.2f}",
          f.cut_messages, b.state.after.cut_through, before);
    case Level::kAggressive:
      return fmt::format(
          "aggressive: usage {:.2f} >= warn {:.2f}; cut {} oversized message(s), dropped the {} "
          "oldest to reach the {:.2f} target",
          before, t.warn, f.cut_messages, f.dropped_count, t.target);
    case Level::kEmergency:
      return fmt::format(
          "emergency: usage {:.2f} >= hard {:.2f}; cut {} oversized message(s), dropped the {} "
          "oldest to reach the {:.2f} target",
          before, t.hard, f.cut_messages, f.dropped_count, t.target);
  }
  return {};
}

}  // namespace

namespace {

std::string compaction_sentence(const BuiltContext& b) {
  const StateChange& st = b.state;
  switch (st.compaction) {
    case CompactionReason::kNone:
      return fmt::format(
          "; no compaction: the prompt grows at its end (verbatim after history id "
          "{})",
          st.after.verbatim_after);
    case CompactionReason::kWindow:
      return fmt::format(
          "; compaction (window): more than the high mark of messages; the "
          "verbatim part now starts after history id {}",
          st.after.verbatim_after);
    case CompactionReason::kThreshold:
      return fmt::format(
          "; compaction (threshold): usage reached warn; the verbatim part now "
          "starts after history id {}",
          st.after.verbatim_after);
    case CompactionReason::kOverflow:
      return fmt::format(
          "; compaction (overflow): the provider refused the prompt; the verbatim "
          "part now starts after history id {}",
          st.after.verbatim_after);
  }
  return {};
}

// A compaction that moved the cut mark says so (one that only moved it dropped nothing).
std::string mark_sentence(const BuiltContext& b) {
  const StateChange& st = b.state;
  if (st.compaction == CompactionReason::kNone || st.after.cut_through == st.before.cut_through)
    return {};
  return fmt::format("; oversized messages up to history id {} are carried cut from now on",
                     st.after.cut_through);
}

}  // namespace

std::string describe_decision(const BuiltContext& b) {
  const Figures& f = b.figures;
  std::string s = level_sentence(b) + compaction_sentence(b) + mark_sentence(b);
  if (b.state.budget_cap)
    s += fmt::format("; budget capped at {} tokens learned from the endpoint", *b.state.budget_cap);
  if (b.state.after.summary_skips > 0)
    s += fmt::format("; summary back-off: the next {} compaction(s) drop instead of summarizing",
                     b.state.after.summary_skips);
  if (b.summarized)
    s += fmt::format("; summarized {} older message(s) into summary #{} ({} tokens, {} call(s))",
                     b.summarized->messages_covered, b.summarized->summary_id,
                     b.summarized->summary_tokens, b.summarized->calls);
  else if (b.summary.pending > 0)
    s += fmt::format("; would summarize {} older message(s)", b.summary.pending);
  else if (b.summary.used)
    s += fmt::format("; summary #{} in use ({} tokens)", b.summary.id, b.summary.tokens);
  if (f.user_truncated) s += "; the user message was cut to fit";
  if (f.rounds > 1) s += fmt::format(" ({} rounds)", f.rounds);
  if (f.hard_truncated) s += "; hard truncation";
  if (f.level != Level::kNone)
    s += fmt::format("; usage now {:.2f}", share(f.estimated_tokens, f.budget_tokens));
  return s;
}

std::string figures_json(const BuiltContext& built, bool after_overflow) {
  ordered_json j = figures(built);
  if (after_overflow) j["after_overflow"] = true;
  j["decision"] = describe_decision(built);  // the sentence the dashboard shows per turn
  return dump(j);
}

std::string summarized_json(const BuiltContext& built) {
  assert(built.summarized);
  const SummaryOutcome& s = *built.summarized;
  nlohmann::json usage = nlohmann::json::array();
  // The calls' cost: null when any call's is unknown (no usage, no price).
  double cost = 0;
  bool priced = !s.usage.empty();
  for (const auto& u : s.usage) {
    usage.push_back(u ? nlohmann::json(*u) : nlohmann::json(nullptr));
    const std::optional<double> one = u ? cost_usd(s.model, *u) : std::nullopt;
    priced = priced && one.has_value();
    cost += one.value_or(0.0);
  }
  // nlohmann::json (sorted keys), as this event has always been written.
  const nlohmann::json j = {{"summary_id", s.summary_id},
                            {"messages_covered", s.messages_covered},
                            {"covers_through", s.covers_through},
                            {"tokens_before", built.figures.tokens_before},
                            {"tokens_after", built.figures.estimated_tokens},
                            {"summary_tokens", s.summary_tokens},
                            {"calls", s.calls},
                            {"skipped", s.skipped},
                            {"cut_tokens", s.cut_tokens},
                            {"latency_ms", s.latency.count()},
                            {"model", s.model},
                            {"cost_usd", priced ? nlohmann::json(cost) : nlohmann::json(nullptr)},
                            {"usage", std::move(usage)}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string dry_run_json(const BuiltContext& built) {
  ordered_json messages = ordered_json::array();
  for (const auto& m : built.messages)
    messages.push_back({{"role", common::to_string(m.role)}, {"content", m.content}});
  ordered_json j;
  j["messages"] = std::move(messages);
  const ordered_json f = figures(built);  // a named object: items() refers into it
  for (const auto& [k, v] : f.items()) j[k] = v;
  j["decision"] = describe_decision(built);
  const Thresholds& t = built.chat.policy.thresholds;
  j["thresholds"] = {{"soft", t.soft}, {"warn", t.warn}, {"hard", t.hard}, {"target", t.target}};
  auto warnings = ordered_json::array();
  for (const auto& w : built.warnings)
    warnings.push_back({{"reason", w.reason}, {"message", w.message}});
  j["warnings"] = std::move(warnings);
  return dump(j, 2);
}

}  // namespace autonous::engine
