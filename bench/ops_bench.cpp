// The operator surface's cost on the worker's hot path: Metrics::record of one turn's committed
// event trail (a context.compressed payload as the worker writes it, llm.request, llm.response,
// turn.completed), on the slot's thread after every commit.

#include <benchmark/benchmark.h>

#include "internal/events/event_types.h"
#include "internal/ops/metrics.h"

namespace {

using namespace autonous;  // NOLINT(google-build-using-namespace): benchmark file

events::Event event(std::string_view type, std::string payload, int64_t at) {
  events::Event e;
  e.type = std::string(type);
  e.payload = std::move(payload);
  e.at_unix_ms = at;
  return e;
}

void BM_RecordTurn(benchmark::State& state) {
  ops::Metrics metrics("gpt-4o-mini");
  const std::vector<events::Event> trail = {
      event(events::kTurnStarted, R"({"attempt":1,"reclaimed":false})", 1000),
      event(
          events::kContextCompressed,
          R"J({"original_count":4,"compressed_count":4,"dropped_count":0,"truncated_count":0,"user_truncated":false,"estimated_tokens":77,"budget_tokens":111616,"system_tokens":16,"user_tokens":8,"history_budget_tokens":111589,"message_count":6,"token_counter":"o200k_base","level":"none","strategy":"token_budget","requested_strategy":"token_budget","tokens_before":77,"tokens_after":77,"usage_before":0.001,"usage_after":0.001,"rounds":0,"cut_messages":0,"hard_truncated":false,"summary_used":false,"summary_id":null,"summary_tokens":0,"summarized":false,"settings":"env","cleared_through":0,"compaction":null,"verbatim_after":0,"compactions":0,"summary_failures":0,"summary_backoff":0,"learned_budget":null,"build_us":540,"evidence_tokens":0,"evidence_reserve":0,"evidence_us":443,"custom":{"ids":[],"halved":0,"left_out":0},"blocks":[{"name":"system","tier":"P0","tokens":16,"count":1,"stable":true,"ids":[]},{"name":"history","tier":"P3","tokens":50,"count":4,"stable":true,"ids":[1999,4000]},{"name":"user","tier":"P1","tokens":8,"count":1,"stable":false,"ids":[]}],"delta":{"reused":["system","history"],"changed":[],"predicted_cached_tokens":40},"recall":{"terms":["load"],"document_terms":[],"items":[],"gatherers":[{"name":"recall","us":383,"candidates":0},{"name":"documents","us":31,"candidates":0}]}})J",
          1001),
      event(
          events::kLlmRequest,
          R"({"budget_tokens":111616,"calibration_scale":1.0,"estimated_tokens":35,"level":"none","message_count":2,"model":"gpt-4o-mini","token_counter":"o200k_base"})",
          1002),
      event(
          events::kLlmResponse,
          R"({"estimated_tokens":35,"finish_reason":"stop","latency_ms":5,"model":"gpt-4o-mini","prompt_tokens_per_estimated":0.65,"status":200,"usage":{"cached_tokens":23,"completion_tokens":15,"prompt_tokens":23,"total_tokens":38}})",
          1100),
      event(events::kTurnCompleted, R"({"attempt":1,"finish_reason":"stop","reply_chars":57})",
            1101)};
  for (auto _ : state) metrics.record(trail);
}
BENCHMARK(BM_RecordTurn);

}  // namespace
