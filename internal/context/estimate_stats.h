#pragma once
// How far token estimates were from what the API counted, per model and token counter, read
// from the llm.request / llm.response events (`autonous context stats`). Read-only.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace SQLite {
class Database;
}

namespace autonous::context {

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

// One row per (model, token_counter), most calls first.
std::vector<EstimateStats> estimate_stats(SQLite::Database& db, const StatsFilter& filter);

// The stats as one JSON object: {"models": [...]} (for the CLI).
std::string estimate_stats_json(const std::vector<EstimateStats>& stats);

}  // namespace autonous::context
