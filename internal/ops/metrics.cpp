#include "internal/ops/metrics.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "internal/events/event_types.h"
#include "internal/ops/dashboard_support.h"
#include "internal/ops/process_metrics.h"

namespace autonous::ops {
namespace {

using nlohmann::json;
using prometheus::Counter;
using prometheus::Family;
using prometheus::Histogram;

// Seconds: from a fast cached reply to LLM_TIMEOUT_SECONDS' default and past it.
const Histogram::BucketBoundaries kSeconds = {0.05, 0.1, 0.25, 0.5, 1,   2.5,
                                              5,    10,  30,   60,  120, 300};

// A user's wait for a reply: from an instant one to a long outage's retries.
const Histogram::BucketBoundaries kWait = {0.5, 1,  2,  3,   5,   7.5, 10,   15,  20,
                                           30,  45, 60, 120, 300, 600, 1800, 3600};

// Label values from data are bounded: at most this many distinct values per label, then "other"
// (a provider cannot grow the registry without limit).
constexpr size_t kMaxLabelValues = 32;

// A number at `key`, or -1 (payload fields the metrics read are never negative).
double number(const json& j, const char* key) { return detail::num(j, key, -1); }
using detail::str;

// A payload without the parts no metric reads (context.compressed's blocks, delta, terms, …):
// the worker's thread builds no tree for them.
json parse_payload(const std::string& text) {
  static const json::parser_callback_t kSkip = [](int depth, json::parse_event_t event,
                                                  json& parsed) {
    if (event != json::parse_event_t::key || depth != 1) return true;
    const auto& key = parsed.get_ref<const std::string&>();
    return key != "blocks" && key != "delta" && key != "custom" && key != "settings";
  };
  return json::parse(text, kSkip, false);
}

}  // namespace

struct Metrics::Impl {
  explicit Impl(std::string model_name) : model(std::move(model_name)) {}

  std::string model;
  std::string version;  // set once, before the server starts
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  Family<Histogram>& llm_duration =
      prometheus::BuildHistogram()
          .Name("autonous_llm_request_duration_seconds")
          .Help(
              "LLM requests (chat completions and summary calls) by model and outcome (ok, "
              "error: an HTTP answer that was not a usable reply)")
          .Register(*registry);
  Family<Histogram>& ttft =
      prometheus::BuildHistogram()
          .Name("autonous_llm_time_to_first_token_seconds")
          .Help("Streamed chat replies (STREAM_REPLIES): request sent to first text, by model")
          .Register(*registry);
  Family<Counter>& tokens =
      prometheus::BuildCounter()
          .Name("autonous_llm_tokens_total")
          .Help(
              "Tokens the API reported, by model and kind: prompt_uncached, prompt_cached (the "
              "prompt's cached part), completion; the kinds add up (sum by kind: every token)")
          .Register(*registry);
  Family<Counter>& cost = prometheus::BuildCounter()
                              .Name("autonous_llm_cost_usd_total")
                              .Help(
                                  "US dollars the LLM calls cost (chat, summary and embeddings "
                                  "calls) by model, at config/models.json's prices (MODELS_FILE); "
                                  "a call of a model without a price adds nothing")
                              .Register(*registry);
  Family<Histogram>& task_duration =
      prometheus::BuildHistogram()
          .Name("autonous_task_duration_seconds")
          .Help(
              "One attempt at a task, claim to outcome (done, retry, failed, released), by "
              "model")
          .Register(*registry);
  Family<Counter>& compressions = prometheus::BuildCounter()
                                      .Name("autonous_context_compressions_total")
                                      .Help("Contexts built, by compression level and strategy")
                                      .Register(*registry);
  Family<Counter>& summaries = prometheus::BuildCounter()
                                   .Name("autonous_context_summaries_total")
                                   .Help("Summary compactions by outcome (ok, failed)")
                                   .Register(*registry);
  Family<Counter>& recall_hits =
      prometheus::BuildCounter()
          .Name("autonous_recall_hits_total")
          .Help(
              "Stored messages and documents the search put into prompts (hits, not the "
              "neighbours that come with them)")
          .Register(*registry);
  Family<Counter>& retries = prometheus::BuildCounter()
                                 .Name("autonous_llm_retries_total")
                                 .Help("Attempts that will be retried, by reason")
                                 .Register(*registry);
  Family<Histogram>& time_to_reply =
      prometheus::BuildHistogram()
          .Name("autonous_task_time_to_reply_seconds")
          .Help(
              "The user's wait: a task's enqueueing (tasks.created_at) to its reply stored, "
              "retries and earlier attempts included")
          .Register(*registry);
  Family<Counter>& failures =
      prometheus::BuildCounter()
          .Name("autonous_tasks_failed_total")
          .Help("Tasks failed for good (no reply; tasks.error says why), by reason")
          .Register(*registry);
  Family<Counter>& warnings =
      prometheus::BuildCounter()
          .Name("autonous_context_warnings_total")
          .Help(
              "Context warnings by reason (server_truncated: the provider cut the prompt; "
              "gatherer_failed, pins_left_out, …: events of type context.warning)")
          .Register(*registry);
  std::mutex mu;
  std::map<std::string, std::set<std::string>> seen;  // label name → values admitted

  // `value`, or "other" once the label has kMaxLabelValues others.
  std::string bounded(const std::string& label, const std::string& value) {
    const std::lock_guard lock(mu);
    auto& values = seen[label];
    if (values.count(value) != 0 || values.size() < kMaxLabelValues) {
      values.insert(value);
      return value;
    }
    return "other";
  }

  void llm_call(const std::string& m, const json& p, const std::string& outcome) {
    const double ms = number(p, "latency_ms");
    if (ms < 0 || number(p, "status") <= 0) return;  // no HTTP answer: no request to time
    llm_duration.Add({{"model", m}, {"outcome", outcome}}, kSeconds).Observe(ms / 1000.0);
  }

  // The prompt's cached tokens are part of its prompt_tokens: counted once, as prompt_cached.
  void usage(const std::string& m, const json& u) {
    if (!u.is_object()) return;
    const double prompt = std::max(0.0, number(u, "prompt_tokens"));
    const double cached = std::min(prompt, std::max(0.0, number(u, "cached_tokens")));
    const double completion = number(u, "completion_tokens");
    for (const auto& [n, kind] : {std::pair{prompt - cached, "prompt_uncached"},
                                  {cached, "prompt_cached"},
                                  {completion, "completion"}})
      if (n > 0) tokens.Add({{"model", m}, {"kind", kind}}).Increment(n);
  }

  // A summary compaction: its calls are LLM requests too (their latency split evenly when a
  // summary took several), and its tokens are spent like a turn's.
  void summarized(const json& p) {
    summaries.Add({{"outcome", "ok"}}).Increment();
    const std::string m = bounded("model", str(p, "model").empty() ? model : str(p, "model"));
    const double calls = number(p, "calls");
    if (const double ms = number(p, "latency_ms"); ms >= 0 && calls >= 1)
      for (int i = 0; i < static_cast<int>(calls); ++i)
        llm_duration.Add({{"model", m}, {"outcome", "ok"}}, kSeconds).Observe(ms / calls / 1000.0);
    if (const auto u = p.find("usage"); u != p.end() && u->is_array())
      for (const json& one : *u) usage(m, one);
  }

  void compressed(const json& p) {
    compressions
        .Add({{"level", bounded("level", str(p, "level"))},
              {"strategy", bounded("strategy", str(p, "strategy"))}})
        .Increment();
    const auto recall = p.find("recall");
    if (recall != p.end() && recall->is_object()) {
      const auto items = recall->find("items");
      double hits = 0;  // chosen by the search (a hit has a score; its neighbours have none)
      if (items != recall->end() && items->is_array())
        for (const json& item : *items) hits += item.is_object() && item.contains("score") ? 1 : 0;
      if (hits > 0) recall_hits.Add({}).Increment(hits);
    }
  }
};

Metrics::Metrics(std::string model) : impl_(std::make_unique<Impl>(std::move(model))) {
  // Present from the start, so a dashboard's rate() has a zero to begin from.
  impl_->recall_hits.Add({});
  for (const char* outcome : {"ok", "failed"}) impl_->summaries.Add({{"outcome", outcome}});
  impl_->warnings.Add({{"reason", "server_truncated"}});
  // Every outcome of an attempt under the configured model, so the alerts' rate() over them
  // counts the first failure after a start too.
  for (const char* outcome : {"done", "retry", "failed", "released"})
    impl_->task_duration.Add({{"model", impl_->model}, {"outcome", outcome}}, kSeconds);
}

Metrics::~Metrics() = default;

void Metrics::set_version(std::string version) { impl_->version = std::move(version); }

void Metrics::record(const std::vector<events::Event>& trail) {
  Impl& m = *impl_;
  std::string model = m.model;
  int64_t started_ms = 0;
  bool answered = false;  // an llm.response in this trail: a later failure is not a 2nd request
  for (const events::Event& e : trail) {
    // Only the payloads read below are parsed (context.compressed's is the big one).
    const bool read = e.type == events::kLlmRequest || e.type == events::kContextCompressed ||
                      e.type == events::kLlmResponse || e.type == events::kLlmRetry ||
                      e.type == events::kTurnFailed || e.type == events::kContextSummarized ||
                      e.type == events::kContextWarning || e.type == events::kTurnCompleted;
    const json p = read ? parse_payload(e.payload) : json::object();
    if (!p.is_object()) continue;
    if (e.type == events::kTurnStarted) {
      started_ms = e.at_unix_ms;
    } else if (e.type == events::kLlmRequest) {
      if (const std::string named = str(p, "model"); !named.empty())
        model = m.bounded("model", named);
    } else if (e.type == events::kContextCompressed) {
      m.compressed(p);
    } else if (e.type == events::kContextSummarized) {
      m.summarized(p);
    } else if (e.type == events::kContextSummaryFailed) {
      m.summaries.Add({{"outcome", "failed"}}).Increment();
    } else if (e.type == events::kContextWarning) {
      m.warnings.Add({{"reason", m.bounded("reason", str(p, "reason"))}}).Increment();
    } else if (e.type == events::kTurnCompleted) {
      if (const double ms = number(p, "time_to_reply_ms"); ms >= 0)
        m.time_to_reply.Add({}, kWait).Observe(ms / 1000.0);
    } else if (e.type == events::kLlmResponse) {
      // A summary's call: its latency and tokens are context.summarized's; an embeddings call:
      // its tokens, under its own model. Only a chat completion is the turn's request.
      const std::string call = str(p, "call");
      const bool chat = call.empty() || call == "chat";
      const std::string& by = chat ? model : m.bounded("model", str(p, "model"));
      if (chat) {
        m.llm_call(model, p, "ok");
        answered = true;
        if (const double ms = detail::num(p, "ttft_ms", -1); ms >= 0)
          m.ttft.Add({{"model", model}}, kSeconds).Observe(ms / 1000.0);
      }
      if (const auto u = p.find("usage"); u != p.end() && call != "summary") m.usage(by, *u);
      if (const double usd = detail::num(p, "cost_usd", -1); usd > 0)
        m.cost.Add({{"model", by}}).Increment(usd);
    } else if (e.type == events::kLlmRetry || e.type == events::kTurnFailed) {
      if (!answered) m.llm_call(model, p, "error");
      answered = false;
      if (e.type == events::kLlmRetry)
        m.retries.Add({{"reason", m.bounded("reason", str(p, "reason"))}}).Increment();
      else
        m.failures.Add({{"reason", m.bounded("reason", str(p, "reason"))}}).Increment();
    }
    const char* outcome = e.type == events::kTurnCompleted   ? "done"
                          : e.type == events::kTurnFailed    ? "failed"
                          : e.type == events::kAgentReleased ? "released"
                          : e.type == events::kLlmRetry      ? "retry"
                                                             : nullptr;
    if (outcome != nullptr && &e == &trail.back() && started_ms > 0 && e.at_unix_ms >= started_ms)
      m.task_duration.Add({{"model", model}, {"outcome", outcome}}, kSeconds)
          .Observe(static_cast<double>(e.at_unix_ms - started_ms) / 1000.0);
  }
}

namespace {

prometheus::MetricFamily gauge_family(const std::string& name, const std::string& help) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = prometheus::MetricType::Gauge;
  return f;
}

void add_gauge(prometheus::MetricFamily& f, double value,
               std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  f.metric.push_back(std::move(m));
}

// Gauges read from the database now: every worker and the dashboard agree on them.
void database_gauges(PageDb& db, TaskCounts& counts, std::vector<prometheus::MetricFamily>& out) {
  auto tasks = gauge_family("autonous_tasks", "Tasks by status, from the database");
  const StatusCounts n = counts.read(db);
  for (size_t i = 0; i < kStatuses.size(); ++i)
    add_gauge(tasks, static_cast<double>(n[i]), {{"status", kStatuses[i]}});
  out.push_back(std::move(tasks));
  auto oldest = gauge_family("autonous_oldest_queued_age_seconds",
                             "Age of the oldest queued task (0 when none is queued)");
  add_gauge(oldest, oldest_queued_age(db).value_or(0.0));
  out.push_back(std::move(oldest));
  // The reply webhook's outbox (#32): rows waiting to be delivered, and given up.
  const Rows r = db.query(
      "SELECT count(*) FILTER (WHERE gave_up_at IS NULL), count(*) FILTER (WHERE gave_up_at IS "
      "NOT NULL) FROM reply_outbox");
  auto outbox = gauge_family("autonous_reply_outbox",
                             "Reply webhook deliveries waiting (pending) or given up "
                             "(undeliverable), from the database");
  add_gauge(outbox, static_cast<double>(r.int64(0, 0)), {{"state", "pending"}});
  add_gauge(outbox, static_cast<double>(r.int64(0, 1)), {{"state", "undeliverable"}});
  out.push_back(std::move(outbox));
}

}  // namespace

std::string Metrics::render(PageDb& db, TaskCounts& counts, const LoopProbe& loop) const {
  std::vector<prometheus::MetricFamily> families = impl_->registry->Collect();
  database_gauges(db, counts, families);
  if (!impl_->version.empty()) {
    auto info = gauge_family("autonous_build_info", "The binary's version (always 1)");
    add_gauge(info, 1, {{"version", impl_->version}});
    families.push_back(std::move(info));
  }
  if (loop) {
    const LoopStatus s = loop();
    auto busy = gauge_family("autonous_busy_slots", "Worker slots inside a task (this process)");
    add_gauge(busy, s.busy);
    families.push_back(std::move(busy));
    auto slots = gauge_family("autonous_slots", "Worker slots (WORKER_CONCURRENCY, this process)");
    add_gauge(slots, s.slots);
    families.push_back(std::move(slots));
  }
  add_process_metrics(families);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace autonous::ops
