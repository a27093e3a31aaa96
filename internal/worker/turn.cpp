#include "internal/worker/turn.h"

#include <spdlog/spdlog.h>

#include "internal/common/clock.h"
#include "internal/openai/client.h"
#include "internal/openai/errors.h"
#include "internal/store/engine.h"
#include "internal/tokens/scaled_counter.h"
#include "internal/worker/backoff.h"
#include "internal/worker/llm_summarizer.h"

namespace autonous::worker {
namespace {

using std::chrono::milliseconds;
using Kind = TurnOutcome::Kind;

milliseconds since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t);
}

}  // namespace

Turn::Turn(TurnParts parts) : parts_(parts), rng_(std::random_device{}()) {}

TurnOutcome Turn::run(const queue::Task& task, const std::function<bool()>& keep_going,
                      const std::function<bool()>& lease_lost) {
  TurnOutcome o;
  o.attempt = task.attempts;
  o.reclaimed = task.reclaimed;
  o.model = parts_.client.model();
  o.started_at = parts_.clock.now();
  o.first_claimed_at = task.first_claimed_at;
  if (task.reclaimed && task.lease_expiries >= parts_.config.task_max_attempts) {
    // Its workers died or hung on this task TASK_MAX_ATTEMPTS times (a poison message):
    // whatever the retry budget says. Retries after errors do not count here.
    o.kind = Kind::kFailed;
    o.error = "gave up after " + std::to_string(task.lease_expiries) +
              " attempts whose leases expired (worker crashed or hung)";
    o.failure = TurnFailure{"lease_expired", o.error,      std::nullopt,
                            milliseconds(0), std::nullopt, o.started_at};
    o.finished_at = o.started_at;
    return o;
  }
  const auto call_started = std::chrono::steady_clock::now();
  try {
    if (parts_.calibrate)
      parts_.counter.set_scale(parts_.engine.calibration_scale(parts_.client.model()));
    parts_.summarizer.set_keep_going(keep_going);
    o.contexts.push_back(build(task, {}));
    // A slow build (a huge history, summaries) must not cost the lease: renew now if due.
    if (!keep_going()) throw openai::aborted_error("aborted before the call");
    try {
      o.result = parts_.client.chat(o.contexts.back().built.messages, keep_going);
    } catch (const openai::ApiError& e) {
      if (!e.context_overflow()) throw;
      // The provider counts more than we did: recompress at the next level, with the budget
      // cut to the target share, and retry once. A second overflow fails the turn.
      o.overflow = TurnFailure{e.reason(),          e.what(),     e.status(),
                               since(call_started), std::nullopt, parts_.clock.now()};
      const context::BuiltContext& first = o.contexts.back().built;
      o.contexts.push_back(build(
          task, {context::next_level(first.figures.level), first.chat.policy.thresholds.target}));
      o.contexts.back().after_overflow = true;
      o.result = parts_.client.chat(o.contexts.back().built.messages, keep_going);
    }
    answered(o);
  } catch (const openai::Error& e) {
    classify(o, e, since(call_started), lease_lost());
  } catch (const std::exception& e) {
    // A storage or internal error: the task is not at fault, so it is retried like a
    // transient LLM failure. Never a crash.
    spdlog::error("task error task_id={} error={:?}", task.id, e.what());
    retry_or_fail(o, TurnFailure{"internal", e.what(), std::nullopt, milliseconds(0), std::nullopt,
                                 parts_.clock.now()});
  }
  return o;
}

ContextStep Turn::build(const queue::Task& task, const context::BuildOptions& options) {
  ContextStep step;
  step.built = parts_.engine.build(task.chat_id, task.text, options);
  step.calibration_scale = parts_.counter.scale();
  step.at = parts_.clock.now();
  if (const auto& s = step.built.summarized)
    spdlog::info("context summarized task_id={} chat_id={:?} messages={} summary_tokens={}",
                 task.id, task.chat_id, s->messages_covered, s->summary_tokens);
  for (const auto& w : step.built.warnings)
    spdlog::warn("context warning task_id={} chat_id={:?} reason={}", task.id, task.chat_id,
                 w.reason);
  return step;
}

void Turn::answered(TurnOutcome& o) {
  const openai::ChatResult& r = *o.result;
  if (parts_.calibrate && r.usage)
    o.calibration_after = parts_.engine.raise_calibration(
        parts_.client.model(), parts_.counter.scale(),
        o.contexts.back().built.figures.estimated_tokens, r.usage->prompt_tokens);
  o.kind = Kind::kDone;
  o.finished_at = parts_.clock.now();
}

void Turn::classify(TurnOutcome& o, const openai::Error& e, milliseconds latency, bool lease_lost) {
  o.finished_at = parts_.clock.now();
  const auto* transport = dynamic_cast<const openai::TransportError*>(&e);
  if (transport != nullptr && transport->aborted()) {
    // Aborted by keep_going: the lease was lost, or a hard stop after the grace period.
    o.kind = lease_lost ? Kind::kLeaseLost : Kind::kRelease;
    return;
  }
  const auto* api = dynamic_cast<const openai::ApiError*>(&e);
  TurnFailure f{e.reason(),
                e.what(),
                api != nullptr ? std::optional<long>(api->status()) : std::nullopt,
                latency,
                e.retry_after(),
                o.finished_at};
  // The provider unreachable or overloaded: RETRY_BUDGET_SECONDS applies (not to a malformed or
  // empty 2xx, a ResponseError, which would repeat).
  f.outage = transport != nullptr || (api != nullptr && !api->in_success_body());
  if (!e.retryable()) {
    o.kind = Kind::kFailed;
    o.error = f.error;
    o.failure = std::move(f);
    return;
  }
  retry_or_fail(o, std::move(f));
}

void Turn::commit_failed(TurnOutcome& o, const std::exception& error) {
  retry_or_fail(o,
                TurnFailure{"internal", std::string("could not store the reply: ") + error.what(),
                            std::nullopt, milliseconds(0), std::nullopt, parts_.clock.now()});
}

// A transient failure is retried while attempts remain (TASK_MAX_ATTEMPTS) or, past them, while
// the next attempt still starts within RETRY_BUDGET_SECONDS of the task's first claim: a provider
// outage of minutes loses no task, a task failing for hours does not retry forever.
void Turn::retry_or_fail(TurnOutcome& o, TurnFailure f) {
  o.finished_at = f.at;
  const bool attempts_left = o.attempt < parts_.config.task_max_attempts;
  milliseconds delay = backoff_delay(o.attempt, parts_.config.retry_base, parts_.config.retry_max,
                                     f.retry_after, rng_);
  if (!attempts_left) {
    // Past the attempt cap only the budget keeps a task going: never faster than our own
    // backoff, whatever a server's Retry-After says (0 would be a hot loop for the budget).
    delay = std::max(delay, backoff_delay(o.attempt, parts_.config.retry_base,
                                          parts_.config.retry_max, std::nullopt, rng_));
  }
  // Only a provider's outage (network, timeout, 408/409/429/5xx) earns the budget; a reply that
  // is malformed or empty, or an internal error, would repeat: the attempt cap ends those.
  const bool within_budget =
      f.outage && f.at + delay - o.first_claimed_at <= parts_.config.retry_budget;
  if (attempts_left || within_budget) {
    o.kind = Kind::kRetryLater;
    o.error = f.error;
    o.delay = delay;
  } else {
    o.kind = Kind::kFailed;
    const auto spent = std::chrono::duration_cast<std::chrono::seconds>(f.at - o.first_claimed_at);
    o.error = f.error + " (gave up after " + std::to_string(o.attempt) + " attempts over " +
              std::to_string(spent.count()) + " s)";
  }
  o.failure = std::move(f);
}

}  // namespace autonous::worker
