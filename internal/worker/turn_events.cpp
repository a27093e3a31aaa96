#include "internal/worker/turn_events.h"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "internal/common/utf8.h"
#include "internal/engine/context_report.h"
#include "internal/engine/context_state_store.h"
#include "internal/engine/model_presets.h"
#include "internal/events/event_types.h"

namespace autonous::worker {
namespace {

using nlohmann::json;
using Kind = TurnOutcome::Kind;

class Trail {
 public:
  explicit Trail(const queue::Task& task) : task_(task) {}

  void add(std::string_view type, const json& payload, common::TimePoint at) {
    add_text(type, payload.dump(-1, ' ', false, json::error_handler_t::replace), at);
  }
  void add_text(std::string_view type, std::string payload, common::TimePoint at) {
    events::Event e;
    e.type = std::string(type);
    e.task_id = task_.id;
    e.chat_id = task_.chat_id;
    e.parent_id = task_.agent_event_id;
    e.payload = std::move(payload);
    e.at_unix_ms = common::to_unix_ms(at);
    events_.push_back(std::move(e));
  }
  std::vector<events::Event> take() { return std::move(events_); }

 private:
  const queue::Task& task_;
  std::vector<events::Event> events_;
};

json status_of(const TurnFailure& f) { return f.status ? json(*f.status) : json(nullptr); }

// What a call cost (config/models.json's prices): priced as the model the API says answered
// (what is billed), else as the model requested; null when the usage or a price is unknown.
json cost_of(bool priced, const std::string& requested, const std::string& answered,
             const std::optional<common::Usage>& usage) {
  if (!priced || !usage) return nullptr;
  std::optional<double> cost = answered.empty() ? std::nullopt : engine::cost_usd(answered, *usage);
  if (!cost) cost = engine::cost_usd(requested, *usage);
  return cost ? json(*cost) : json(nullptr);
}

json usage_of(const std::optional<common::Usage>& usage) {
  return usage ? json(*usage) : json(nullptr);
}

// An llm.response for a call that is not the turn's chat completion: a summary's (its latency
// is context.summarized's) or recall's embeddings.
void add_side_call(Trail& trail, std::string_view call, bool priced, const std::string& model,
                   const std::optional<common::Usage>& usage,
                   std::optional<std::chrono::milliseconds> latency, common::TimePoint at) {
  json p = {{"call", call}, {"model", model}, {"usage", usage_of(usage)}};
  if (latency) p["latency_ms"] = latency->count();
  p["cost_usd"] = cost_of(priced, model, "", usage);
  trail.add(events::kLlmResponse, p, at);
}

void add_context(Trail& trail, const TurnOutcome& o, const ContextStep& step) {
  const engine::BuiltContext& b = step.built;
  if (b.summarized) {
    if (o.priced) {
      trail.add_text(events::kContextSummarized, engine::summarized_json(b), step.at);
    } else {  // not at list prices on this endpoint (COST_PRICES)
      json summarized = json::parse(engine::summarized_json(b));
      summarized["cost_usd"] = nullptr;
      trail.add(events::kContextSummarized, summarized, step.at);
    }
    for (const auto& usage : b.summarized->usage)
      add_side_call(trail, "summary", o.priced, b.summarized->model, usage, std::nullopt, step.at);
  }
  for (const auto& w : b.warnings) {
    const bool failed = w.reason == "summary_failed";
    trail.add(failed ? events::kContextSummaryFailed : events::kContextWarning,
              {{"reason", w.reason}, {"message", w.message}}, step.at);
  }
  trail.add_text(events::kContextCompressed, engine::figures_json(b, step.after_overflow), step.at);
  trail.add(events::kLlmRequest,
            {{"model", o.model},
             {"token_counter", b.figures.counter},
             {"calibration_scale", step.calibration_scale},
             {"calibration_added_tokens", step.calibration_added},
             {"message_count", b.messages.size()},
             {"estimated_tokens", b.figures.estimated_tokens},
             {"budget_tokens", b.figures.budget_tokens},
             {"level", engine::to_string(b.figures.level)}},
            step.at);
}

void add_learned(Trail& trail, const LearnedBudget& l, common::TimePoint at) {
  trail.add(events::kContextLimitLearned,
            {{"endpoint", engine::endpoint_key(l.endpoint)},
             {"model", l.model},
             {"budget_tokens", l.budget_tokens},
             {"sent_tokens", l.sent_tokens},
             {"stated_limit", l.stated_limit ? json(*l.stated_limit) : json(nullptr)},
             {"server_tokens", l.server_tokens ? json(*l.server_tokens) : json(nullptr)}},
            at);
}

json retry_payload(const TurnOutcome& o, const TurnFailure& f, std::chrono::milliseconds delay) {
  return {{"attempt", o.attempt},
          {"reason", f.reason},
          {"status", status_of(f)},
          {"latency_ms", f.latency.count()},
          {"delay_ms", delay.count()},
          {"retry_after_ms", f.retry_after ? json(f.retry_after->count()) : json(nullptr)},
          {"error", f.error}};
}

// A tool-using turn's steps (#29): each reply that called tools (llm.response with its
// `tool_calls` count), each call run (tool.call: never the tool's headers or its result's text),
// and the request that followed (llm.request with its `step`).
void add_tool_steps(Trail& trail, const TurnOutcome& o) {
  if (o.contexts.empty()) return;
  const engine::BuiltContext& b = o.contexts.back().built;
  size_t steps = 0;  // the messages the steps added so far
  for (size_t i = 0; i < o.tool_replies.size(); ++i) {
    const openai::ChatResult& r = o.tool_replies[i];
    steps += 1 + r.tool_calls.size();
    const int64_t estimated = i == 0 ? b.figures.estimated_tokens : o.step_tokens[i - 1];
    json response = {{"call", "chat"},
                     {"status", r.http_status},
                     {"latency_ms", r.latency.count()},
                     {"model", r.model},
                     {"finish_reason", r.finish_reason},
                     {"step", i + 1},
                     {"tool_calls", r.tool_calls.size()},
                     {"estimated_tokens", estimated},
                     {"usage", usage_of(r.usage)},
                     {"cost_usd", cost_of(o.priced, o.model, r.model, r.usage)}};
    if (r.ttft) response["ttft_ms"] = r.ttft->count();
    trail.add(events::kLlmResponse, response, o.finished_at);
    for (const ToolRun& run : o.tool_runs) {
      if (run.step != i) continue;
      json call = {{"name", run.name},
                   {"source", run.source},
                   {"tool_call_id", run.id},
                   {"latency_ms", run.latency.count()},
                   {"status", run.ok ? "ok" : "error"},
                   {"http_status", run.http_status ? json(*run.http_status) : json(nullptr)},
                   {"result_bytes", run.result_bytes},
                   {"result_tokens", run.result_tokens},
                   {"cut", run.cut}};
      if (!run.ok) call["error"] = run.error.substr(0, 500);
      trail.add(events::kToolCall, call, o.finished_at);
    }
    if (i < o.step_tokens.size())
      trail.add(events::kLlmRequest,
                {{"model", o.model},
                 {"step", i + 2},
                 {"token_counter", b.figures.counter},
                 {"message_count", b.messages.size() + steps},
                 {"estimated_tokens", o.step_tokens[i]},
                 {"budget_tokens", b.figures.budget_tokens}},
                o.finished_at);
  }
}

// llm.response: the answer arrived (whether or not the turn then completed).
void add_response(Trail& trail, const TurnOutcome& o) {
  const openai::ChatResult& r = *o.result;
  const int64_t estimated =
      !o.step_tokens.empty()
          ? o.step_tokens.back()
          : (o.contexts.empty() ? 0 : o.contexts.back().built.figures.estimated_tokens);
  json response = {{"call", "chat"},
                   {"status", r.http_status},
                   {"latency_ms", r.latency.count()},
                   {"model", r.model},
                   {"finish_reason", r.finish_reason},
                   {"estimated_tokens", estimated},
                   {"usage", usage_of(r.usage)},
                   {"cost_usd", cost_of(o.priced, o.model, r.model, r.usage)}};
  if (r.ttft) response["ttft_ms"] = r.ttft->count();  // streamed (STREAM_REPLIES)
  if (r.usage && estimated > 0)
    response["prompt_tokens_per_estimated"] =
        static_cast<double>(r.usage->prompt_tokens) / static_cast<double>(estimated);
  if (o.calibration_after) {
    response["calibration_scale"] = o.calibration_after->scale;
    response["calibration_added_tokens"] = o.calibration_after->added;
  }
  trail.add(events::kLlmResponse, response, o.finished_at);
}

// Milliseconds from the task's enqueueing to `at`; nullopt when its created_at is unknown.
std::optional<int64_t> since_enqueued(const TurnOutcome& o, common::TimePoint at) {
  if (o.enqueued_at == common::TimePoint{}) return std::nullopt;
  return std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(at - o.enqueued_at).count());
}

void add_done(Trail& trail, const TurnOutcome& o) {
  const openai::ChatResult& r = *o.result;
  add_response(trail, o);
  if (o.truncated)
    trail.add(events::kContextWarning, {{"reason", "server_truncated"}, {"message", *o.truncated}},
              o.finished_at);
  json completed = {{"attempt", o.attempt},
                    {"reply_chars", common::count_code_points(r.content)},
                    {"finish_reason", r.finish_reason}};
  // The user's wait: queued to this reply, retries and earlier attempts included.
  if (const auto waited = since_enqueued(o, o.finished_at)) completed["time_to_reply_ms"] = *waited;
  trail.add(events::kTurnCompleted, completed, o.finished_at);
}

void add_ending(Trail& trail, const TurnOutcome& o) {
  // An answer that could not be stored: it arrived, the turn did not complete.
  if (o.result && o.kind != Kind::kDone) add_response(trail, o);
  switch (o.kind) {
    case Kind::kDone:
      add_done(trail, o);
      break;
    case Kind::kRetryLater:
      trail.add(events::kLlmRetry, retry_payload(o, *o.failure, o.delay), o.finished_at);
      break;
    case Kind::kFailed:
      trail.add(events::kTurnFailed,
                {{"attempt", o.attempt},
                 {"reason", o.failure->reason},
                 {"status", status_of(*o.failure)},
                 {"latency_ms", o.failure->latency.count()},
                 {"error", o.error}},
                o.finished_at);
      break;
    case Kind::kRelease:
      if (o.failure)  // the database failed the turn: given back, the attempt not counted
        trail.add(
            events::kAgentReleased,
            {{"reason", o.failure->reason}, {"attempt", o.attempt}, {"error", o.failure->error}},
            o.finished_at);
      else
        trail.add(events::kAgentReleased, {{"reason", "shutdown"}, {"attempt", o.attempt}},
                  o.finished_at);
      break;
    case Kind::kLeaseLost:
      break;
  }
}

}  // namespace

std::vector<events::Event> turn_events(const queue::Task& task, const TurnOutcome& o) {
  Trail trail(task);
  if (o.kind == Kind::kLeaseLost) return {};
  if (o.failure && o.failure->reason == "lease_expired") {
    // The task's earlier workers died on every attempt: no turn ran.
    trail.add(events::kTurnFailed,
              {{"attempt", o.attempt}, {"reason", "lease_expired"}, {"error", o.error}},
              o.finished_at);
    return trail.take();
  }
  json started = {{"attempt", o.attempt}, {"reclaimed", o.reclaimed}};
  if (const auto waited = since_enqueued(o, o.started_at)) started["queued_ms"] = *waited;
  trail.add(events::kTurnStarted, started, o.started_at);
  if (o.fallback_after)
    trail.add(events::kLlmFallback,
              {{"model", o.model},
               {"from", o.fallback_from},
               {"attempt", o.attempt},
               {"provider_failures", *o.fallback_after}},
              o.started_at);
  for (const SideCall& c : o.embedding_calls)  // recall's, made while the context was built
    add_side_call(trail, "embeddings", o.embeddings_priced, c.model, c.usage, c.latency,
                  o.started_at);
  for (size_t i = 0; i < o.contexts.size(); ++i) {
    add_context(trail, o, o.contexts[i]);
    if (i < o.overflows.size()) {
      // The provider refused the prompt as too long: a rebuild into the learned budget follows.
      const TurnFailure& f = o.overflows[i];
      json retry = retry_payload(o, f, std::chrono::milliseconds(0));
      retry["recompress"] = true;
      for (const LearnedBudget& l : o.learned)
        if (l.overflow == i) add_learned(trail, l, f.at);
      trail.add(events::kLlmRetry, retry, f.at);
    }
  }
  for (const LearnedBudget& l : o.learned) {
    // An overflow the turn gave up on still taught a budget (later turns start within it).
    if (l.overflow && *l.overflow >= o.overflows.size()) add_learned(trail, l, o.finished_at);
    // A probable overflow's, stored once the smaller prompt was answered.
    if (!l.overflow) add_learned(trail, l, l.at);
  }
  add_tool_steps(trail, o);
  add_ending(trail, o);
  return trail.take();
}

}  // namespace autonous::worker
