#pragma once
// Event stats: `autonous context stats`, read from events (read-only): what the engine did on each
// turn (context.compressed: turns, compressions by level, compression ratio, tokens saved) and how
// far token estimates were from what the API counted (llm.request / llm.response), per model
// and token counter; what the calls cost (llm.response's cost_usd), per model.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace autonous::events {

struct EstimateStats {
  std::string model;          // as requested (llm.request)
  std::string token_counter;  // the counter that made the estimate
  int64_t calls = 0;          // responses that carried usage.prompt_tokens
  // Distribution of prompt_tokens / estimated_tokens: above 1 means the estimate was low.
  double mean_ratio = 0;
  double p50_ratio = 0;
  double p90_ratio = 0;
  double p99_ratio = 0;
  double max_ratio = 0;
  double min_ratio = 0;
  double share_under = 0;  // fraction of calls where the API counted more than estimated
};

struct StatsFilter {
  std::optional<std::string> chat_id;
  std::optional<std::string> since;  // ISO-8601 UTC lower bound on created_at, e.g. 2026-11-01
};

struct CompressionStats {
  int64_t turns = 0;                        // context.compressed events
  std::map<std::string, int64_t> by_level;  // none, normal, aggressive, emergency (unknown: older)
  int64_t compressed_turns = 0;             // level above none
  double mean_ratio = 0;          // tokens_after / tokens_before, averaged over compressed turns
  int64_t tokens_saved = 0;       // sum of tokens_before − tokens_after
  int64_t overflow_rebuilds = 0;  // rebuilt after a provider's "context length exceeded"
  int64_t warnings = 0;           // context.warning events
  int64_t summaries = 0;          // context.summarized events (summarize compactions)
  int64_t summary_failures = 0;   // context.summary_failed events
};

// What the LLM calls cost (#31), from llm.response events: one row per (model, call), the
// model as the response names it (a chat completion's: the model the API says answered), most
// dollars first. A call without a cost figure (a model without a price, a call without usage)
// counts in `calls` but not in `priced_calls` or `cost_usd`.
struct CostStats {
  std::string model;
  std::string call;  // chat | summary | embeddings (older events: chat)
  int64_t calls = 0;
  int64_t priced_calls = 0;
  double cost_usd = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
};

// The rows' total as a JSON object: {"usd", "calls", "priced_calls", "models": [{model, call,
// calls, priced_calls, cost_usd, prompt_tokens, completion_tokens, cached_tokens}]}; "usd" is
// null when no call was priced.
nlohmann::ordered_json cost_json(const std::vector<CostStats>& costs);

// One row per (model, token_counter), most calls first.

// What both backends' queries feed: the API's / the estimate's ratios per (model, counter), and
// the context.compressed rows one by one.
namespace detail {
// A payload's token figure is read only when it is a JSON number, truncated to a whole number
// and clamped to [0, 10^12] (a figure no worker writes cannot overflow or underflow a cast);
// both backends' SQL use this bound, and the sums saturate.
inline constexpr const char* kMaxFigureSql = "1000000000000";
using EstimateSamples = std::map<std::pair<std::string, std::string>, std::vector<double>>;
std::vector<EstimateStats> summarize(EstimateSamples samples);
class CompressionTally {
 public:
  CompressionTally();
  void add(const std::string& level, int64_t before, int64_t after, bool overflow_rebuild);
  CompressionStats finish() const;  // without the warning and summary counts

 private:
  CompressionStats stats_;
  double ratio_sum_ = 0;
};
}  // namespace detail

// Both as one JSON object (for the CLI): turns, compressions, emergency, ..., "models": [...].
std::string context_stats_json(const CompressionStats& compression,
                               const std::vector<EstimateStats>& estimates,
                               const std::vector<CostStats>& costs = {});

}  // namespace autonous::events
