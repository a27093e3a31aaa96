#include "internal/worker/turn.h"

#include <spdlog/spdlog.h>

#include "internal/common/clock.h"
#include "internal/common/log.h"
#include "internal/common/sha256.h"
#include "internal/common/text.h"
#include "internal/common/utf8.h"
#include "internal/engine/calibration_store.h"
#include "internal/engine/engine.h"
#include "internal/openai/client.h"
#include "internal/openai/endpoint.h"
#include "internal/openai/errors.h"
#include "internal/tokens/scaled_counter.h"
#include "internal/tools/toolset.h"
#include "internal/worker/backoff.h"
#include "internal/worker/fallback.h"
#include "internal/worker/llm_summarizer.h"
#include "internal/worker/window_probe.h"

namespace autonous::worker {
namespace {

using std::chrono::milliseconds;
using Kind = TurnOutcome::Kind;

milliseconds since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t);
}

}  // namespace

int64_t fitted_budget(int64_t sent_tokens, int64_t budget_tokens, double target,
                      const openai::Overflow& said) {
  int64_t budget = 0;
  if (said.limit && *said.limit > 0) {
    // The stated window, a quarter left for the reply, in our tokens: the server's count of
    // this prompt against ours gives the exchange rate.
    const std::optional<int64_t> counted = said.prompt ? said.prompt : said.requested;
    double ours_per_theirs = 1.0;
    if (counted && *counted > 0)
      ours_per_theirs =
          std::clamp(static_cast<double>(sent_tokens) / static_cast<double>(*counted), 0.25, 4.0);
    budget = static_cast<int64_t>(static_cast<double>(*said.limit) * 0.75 * ours_per_theirs);
  } else {
    budget = static_cast<int64_t>(static_cast<double>(budget_tokens) * target);
  }
  // Always smaller than what was refused.
  return std::max<int64_t>(std::min(budget, sent_tokens * 9 / 10), 1);
}

Turn::Turn(TurnParts parts)
    : parts_(parts), rng_(std::random_device{}()), default_inner_(&parts_.counter.inner()) {}

bool Turn::calibrating() const { return parts_.calibrate && parts_.counter.name() == "estimate"; }

std::optional<engine::ModelCaps> Turn::use_chat_model(const std::string& model, TurnOutcome& o) {
  if (o.fallback_after) {  // the fallback answers, whatever the chat's model; it is what failed
    o.fallback_from = model;
    return std::nullopt;
  }
  // An Azure deployment URL picks the model itself: a stored model of the chat would only
  // mislabel the call (`chat set --model` refuses it there; one set before is ignored).
  if (common::to_lower_ascii(parts_.config.openai_base_url).find("/openai/deployments/") !=
      std::string::npos)
    return std::nullopt;
  const bool env = model == parts_.config.openai_model;
  model_ = env ? std::string() : model;
  o.model = this->model();
  parts_.counter.set_inner(env || !parts_.counter_for ? *default_inner_
                                                      : parts_.counter_for(model));
  apply_calibration();
  if (!o.contexts.empty()) return std::nullopt;  // a rebuild keeps the caps it was given
  engine::ModelCaps caps;
  caps.budget_cap = parts_.engine.learned_budget(parts_.config.openai_base_url, this->model());
  if (probing())
    caps.messages_cap = parts_.probe->cap(probe_key(parts_, this->model()), budget_tokens(),
                                          parts_.counter.scale(), parts_.counter.added());
  chat_messages_cap_ = caps.messages_cap;  // a rebuild keeps it (call_with_rebuilds)
  return caps;
}

bool Turn::refused_before_any_call(const queue::Task& task, TurnOutcome& o) const {
  if (task.reclaimed && task.lease_expiries >= parts_.config.task_max_attempts) {
    // Its workers died or hung on this task TASK_MAX_ATTEMPTS times (a poison message):
    // whatever the retry budget says. Retries after errors do not count here.
    o.kind = Kind::kFailed;
    o.error = "gave up after " + std::to_string(task.lease_expiries) +
              " attempts whose leases expired (worker crashed or hung)";
    o.failure = TurnFailure{"lease_expired", o.error,      std::nullopt,
                            milliseconds(0), std::nullopt, o.started_at};
    o.finished_at = o.started_at;
    return true;
  }
  if (!common::is_valid_utf8(task.chat_id) || task.chat_id.find('\0') != std::string::npos) {
    // A front end wrote a chat id that is not text (a BLOB such as X'00FF'): its history could
    // never be stored, so no call is made for it and no retry will help.
    o.kind = Kind::kFailed;
    o.error = "chat_id is not UTF-8 text without NUL bytes: the task cannot be answered";
    o.failure = TurnFailure{"invalid_task",  o.error,      std::nullopt,
                            milliseconds(0), std::nullopt, o.started_at};
    o.finished_at = o.started_at;
    return true;
  }
  return false;
}

void Turn::call_with_rebuilds(const queue::Task& task, engine::BuildOptions options,
                              const std::function<bool()>& keep_going,
                              std::chrono::steady_clock::time_point call_started, TurnOutcome& o) {
  // A probable overflow (an unknown wording): its budget, kept once the smaller prompt is
  // answered (and no sure overflow taught a better one meanwhile), with the answer's text.
  std::optional<LearnedBudget> unconfirmed;
  std::string unconfirmed_error;
  for (int rebuilds = 0;; ++rebuilds) {
    try {
      openai::CallOptions call =
          call_options(task.chat_id, o.contexts.back().built.chat.policy.tools);
      stream_into(call, task);
      o.result = parts_.client.chat(o.contexts.back().built.messages, keep_going, call);
      break;
    } catch (const openai::ApiError& e) {
      if (!e.context_overflow()) throw;
      const bool probable = e.overflow()->probable;
      // An answer in a wording we do not know gets one smaller try; a second fails the task as
      // any 400 does.
      if (probable && (unconfirmed || rebuilds >= kMaxRebuilds)) throw;
      const int64_t refused = o.contexts.back().built.figures.estimated_tokens;
      // The server's window is smaller than we thought: learn the budget it allows (kept
      // for later turns, also when this turn gives up; a probable one only once answered),
      // then compact into it and try again.
      options.budget_cap = learn(o, e, /*store=*/!probable);
      if (probable) {
        unconfirmed = o.learned.back();
        o.learned.pop_back();
        unconfirmed_error = e.what();
        // At most half the budget in force per probable answer: a 400 that was no overflow
        // (answered once the rebuild dropped something else) costs later turns little.
        unconfirmed->budget_tokens =
            std::max(unconfirmed->budget_tokens,
                     o.contexts.back().built.figures.budget_tokens / kProbableLearnShare);
      } else {
        unconfirmed.reset();  // a sure answer teaches more than the guess before it
      }
      if (rebuilds >= kMaxRebuilds) throw;
      o.overflows.push_back(TurnFailure{e.reason(), e.what(), e.status(), since(call_started),
                                        std::nullopt, parts_.clock.now()});
      options.min_level = engine::next_level(o.contexts.back().built.figures.level);
      if (!model_.empty() && !o.fallback_after)
        options.messages_cap = chat_messages_cap_;  // the chat's model's probe, not OPENAI_MODEL's
      o.contexts.push_back(build(task, options, keep_going));
      o.contexts.back().after_overflow = true;
      // A rebuild that is not materially smaller would be refused the same (or the 400 was no
      // overflow at all): no second call for a guess.
      if (probable && static_cast<double>(o.contexts.back().built.figures.estimated_tokens) >
                          kProbableSmaller * static_cast<double>(refused)) {
        o.contexts.pop_back();  // never sent: the trail shows the one refusal
        o.overflows.pop_back();
        throw;
      }
    }
  }
  if (unconfirmed) {  // the smaller prompt was answered: the budget is kept for later turns
    try {
      unconfirmed->budget_tokens = parts_.engine.learn_budget(
          unconfirmed->endpoint, unconfirmed->model, unconfirmed->budget_tokens, std::nullopt,
          "probable overflow (unknown wording), answered at a smaller budget: " +
              unconfirmed_error);
    } catch (const std::exception& error) {
      spdlog::warn("storing the learned budget failed: {}", error.what());
    }
    unconfirmed->overflow.reset();  // stored now, after the answer
    unconfirmed->at = parts_.clock.now();
    o.learned.push_back(*unconfirmed);
  }
}

void Turn::choose_model(const queue::Task& task, TurnOutcome& o) {
  model_.clear();
  const config::Config& c = parts_.config;
  if (c.openai_fallback_model.empty() || !parts_.retries ||
      task.attempts <= c.fallback_after_failures)
    return;
  int failures = 0;
  try {
    failures = provider_failures_before(parts_.retries(task.id), task.attempts);
  } catch (const std::exception& e) {  // the main model then; the next attempt reads again
    log::warn("reading a task's retries for the fallback failed",
              {{"task_id", task.id}, {"error", e.what()}});
    return;
  }
  if (failures < c.fallback_after_failures) return;
  model_ = c.openai_fallback_model;
  o.fallback_after = failures;
  o.fallback_from = parts_.client.model();
}

const std::string& Turn::model() const { return model_.empty() ? parts_.client.model() : model_; }

TurnOutcome Turn::run(const queue::Task& task, const std::function<bool()>& keep_going,
                      const std::function<bool()>& lease_lost) {
  TurnOutcome o;
  o.attempt = task.attempts;
  o.reclaimed = task.reclaimed;
  o.started_at = parts_.clock.now();
  o.first_claimed_at = task.first_claimed_at;
  o.enqueued_at = task.enqueued_at;
  chat_messages_cap_.reset();
  choose_model(task, o);
  o.model = model();
  o.priced = openai::list_prices_apply(parts_.config.cost_prices, parts_.config.openai_base_url);
  o.embeddings_priced =
      openai::list_prices_apply(parts_.config.cost_prices, parts_.config.embedding_base_url.empty()
                                                               ? parts_.config.openai_base_url
                                                               : parts_.config.embedding_base_url);
  if (refused_before_any_call(task, o)) return o;
  const auto call_started = std::chrono::steady_clock::now();
  try {
    parts_.counter.set_inner(*default_inner_);  // a chat's own model switches it (use_chat_model)
    apply_calibration();
    parts_.summarizer.set_keep_going(keep_going);
    engine::BuildOptions options;
    options.declarations = [this](const engine::ToolNames& tools) {
      return declared_tokens(tools);
    };
    options.chat_model = [this, &o](const std::string& chat_model) {
      return use_chat_model(chat_model, o);
    };
    options.defer_commit =
        true;  // stored with the reply (Slot::complete): a failed turn moves nothing
    options.budget_cap = parts_.engine.learned_budget(parts_.config.openai_base_url, model());
    if (o.fallback_after) {  // the fallback's window, when smaller than the main model's
      const int64_t fits =
          engine::resolve_prompt_budget(budget_inputs(parts_.config, model())).tokens;
      options.budget_cap = std::min(options.budget_cap.value_or(fits), fits);
    }
    // The probe's cap is the messages' (it judges their estimate), after the declarations.
    if (probing())
      options.messages_cap = parts_.probe->cap(probe_key(parts_, model()), budget_tokens(),
                                               parts_.counter.scale(), parts_.counter.added());
    o.contexts.push_back(build(task, options, keep_going));
    // A slow build (a huge history, summaries) must not cost the lease: renew now if due.
    if (!keep_going()) throw openai::aborted_error("aborted before the call");
    call_with_rebuilds(task, options, keep_going, call_started, o);
    answered(task, o);
    if (!o.result->tool_calls.empty()) run_tools(task, keep_going, o);
  } catch (const openai::Error& e) {
    // A reply the provider withheld was still answered (and billed): its llm.response is kept.
    if (const auto* withheld = dynamic_cast<const openai::ReplyWithheldError*>(&e))
      o.result = withheld->answered();
    if (const auto* empty = dynamic_cast<const openai::ResponseError*>(&e);
        empty && empty->answered())
      o.result = empty->answered();
    classify(o, e, since(call_started), lease_lost());
  } catch (const engine::SummaryAborted& e) {
    classify(o, openai::aborted_error(e.what()), since(call_started), lease_lost());
  } catch (const std::exception& e) {
    if (parts_.db_transient && parts_.db_transient(e)) {
      // The database refused for now (lost, read-only, a cancelled statement): the task is
      // given back as it was, its attempt not counted; the slot waits the database out.
      log::warn("database error building a task's context: giving it back",
                {{"task_id", task.id}, {"error", e.what()}});
      o.kind = Kind::kRelease;
      o.finished_at = parts_.clock.now();
      o.failure = TurnFailure{"database_unavailable", e.what(),     std::nullopt,
                              milliseconds(0),        std::nullopt, o.finished_at};
      return o;
    }
    // A storage or internal error: the task is not at fault, so it is retried like a
    // transient LLM failure. Never a crash.
    log::error("task error", {{"task_id", task.id}, {"error", e.what()}});
    retry_or_fail(o, TurnFailure{"internal", e.what(), std::nullopt, milliseconds(0), std::nullopt,
                                 parts_.clock.now()});
  }
  return o;
}

openai::CallOptions Turn::call_options(const std::string& chat_id,
                                       const engine::ToolNames& tools) const {
  openai::CallOptions call;
  if (parts_.toolset != nullptr && !parts_.toolset->empty()) {
    call.tools = parts_.toolset->offered(tools);
    if (!call.tools.empty() && parts_.config.tool_max_steps <= 1)
      call.tool_choice = "none";  // one call: text
  }
  const std::string& mode = parts_.config.prompt_cache_key;
  // OpenAI's own host, not the name anywhere in the URL (a gateway's query may hold it).
  const bool openai = openai::url_host(parts_.config.openai_base_url) == "api.openai.com";
  if (model() != parts_.client.model()) call.model = model();
  const std::string chat_hash = "autonous-" + common::sha256_hex(chat_id).substr(0, 32);
  if (mode == "on" || (mode == "auto" && openai)) call.prompt_cache_key = chat_hash;
  if (parts_.config.openai_send_user) call.user = chat_hash;
  if (!parts_.config.prompt_cache_retention.empty())
    call.prompt_cache_retention = parts_.config.prompt_cache_retention;
  return call;
}

ContextStep Turn::build(const queue::Task& task, const engine::BuildOptions& options,
                        const std::function<bool()>& keep_going) {
  ContextStep step;
  // A build of a huge message or history counts for seconds: between counts the lease is
  // renewed when due (keep_going), and a hard stop or a lost lease ends the build.
  parts_.counter.set_checkpoint([&keep_going] {
    if (!keep_going()) throw openai::aborted_error("aborted while the context was built");
  });
  struct Unset {
    tokens::ScaledCounter& counter;
    ~Unset() { counter.set_checkpoint({}); }
  } unset{parts_.counter};
  step.built = parts_.engine.build(task.chat_id, task.text, options);
  step.calibration_scale = parts_.counter.scale();
  step.calibration_added = parts_.counter.added();
  step.at = parts_.clock.now();
  if (const auto& s = step.built.summarized)
    log::info("context summarized", {{"task_id", task.id},
                                     {"chat_id", task.chat_id},
                                     {"messages", s->messages_covered},
                                     {"summary_tokens", s->summary_tokens}});
  for (const auto& w : step.built.warnings)
    log::warn("context warning",
              {{"task_id", task.id}, {"chat_id", task.chat_id}, {"reason", w.reason}});
  return step;
}

int64_t Turn::learn(TurnOutcome& o, const openai::ApiError& e, bool store) {
  const engine::BuiltContext& sent = o.contexts.back().built;
  const openai::Overflow& said = *e.overflow();
  LearnedBudget l{parts_.config.openai_base_url,
                  model(),
                  0,
                  sent.figures.estimated_tokens,
                  said.probable ? std::nullopt : said.limit,
                  said.prompt ? said.prompt : said.requested,
                  o.overflows.size(),  // the overflow answer's index once it is recorded
                  parts_.clock.now()};
  // A learned budget is the whole prompt's: the declarations the server counted come in (the
  // engine leaves them room out of it again).
  const int64_t declared = sent.figures.tools_tokens;
  l.budget_tokens =
      fitted_budget(sent.figures.estimated_tokens + declared, sent.figures.budget_tokens + declared,
                    sent.chat.policy.thresholds.target, said);
  try {
    if (store)
      l.budget_tokens =
          parts_.engine.learn_budget(l.endpoint, l.model, l.budget_tokens, said.limit, e.what());
  } catch (const std::exception& error) {
    // Not stored for later turns; this turn still compacts into what it learned.
    spdlog::warn("storing the learned budget failed; this turn uses it: {}", error.what());
  }
  o.learned.push_back(l);
  return l.budget_tokens;
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

void Turn::count_database_failure(TurnOutcome& o) {
  TurnFailure f = *o.failure;
  f.reason = "internal";
  f.error = "the database kept failing the turn: " + f.error;
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
