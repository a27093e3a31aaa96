// Turn's calibration after an answer (#28): the estimator's scale moved toward the server's
// count when the prompt was taken whole (window_probe.h), a silent window learned as a budget.
#include <spdlog/spdlog.h>

#include "internal/engine/calibration_store.h"
#include "internal/engine/engine.h"
#include "internal/engine/model_presets.h"
#include "internal/openai/client.h"
#include "internal/tokens/scaled_counter.h"
#include "internal/tools/toolset.h"
#include "internal/worker/turn.h"
#include "internal/worker/window_probe.h"

namespace autonous::worker {

using Kind = TurnOutcome::Kind;

std::string probe_key(const TurnParts& parts, const std::string& model) {
  return parts.config.openai_base_url + '\n' + model;
}

engine::BudgetInputs budget_inputs(const config::Config& c, const std::string& model) {
  // CONTEXT_WINDOW and RESERVE_OUTPUT_TOKENS describe OPENAI_MODEL: a fallback has its preset.
  if (model != c.openai_model) return {model, c.max_context_tokens, std::nullopt, std::nullopt};
  return {c.openai_model, c.max_context_tokens, c.context_window, c.reserve_output_tokens};
}

bool Turn::window_known() const {
  try {
    const config::Config& c = parts_.config;
    return engine::resolve_prompt_budget(budget_inputs(c, model())).window > 0;
  } catch (const std::exception&) {
    return false;
  }
}

int64_t Turn::budget_tokens() const {
  try {
    const config::Config& c = parts_.config;
    return engine::resolve_prompt_budget(budget_inputs(c, model())).tokens;
  } catch (const std::exception&) {
    return 0;
  }
}

int64_t Turn::declared_tokens(const engine::ToolNames& tools) const {
  if (parts_.toolset == nullptr || parts_.toolset->empty()) return 0;
  const std::string offered = parts_.toolset->offered(tools);
  return offered.empty() ? 0 : parts_.counter.count_text(offered);
}

void Turn::apply_calibration() {
  calibration_ = calibrating() ? parts_.engine.calibration(parts_.config.openai_base_url, model())
                               : engine::Calibration{};
  parts_.counter.set_scale(calibration_.scale);
  parts_.counter.set_added(calibration_.added);
  // What this or an earlier process saw this server take whole, so that the probe need not prove
  // it again (and forgets it after `context limits --clear`).
  if (parts_.probe != nullptr)
    parts_.probe->set_proven(probe_key(parts_, model()), calibration_.proven);
}

bool Turn::probing() const { return calibrating() && parts_.probe != nullptr && !window_known(); }

void Turn::learn_silent_window(TurnOutcome& o, int64_t text_estimated, int64_t plateau) {
  // Learned kWindowShare of the count the server stays at, in the engine's tokens, which
  // calibration keeps a margin above the server's.
  const engine::BuiltContext& sent = o.contexts.back().built;
  const int64_t framing = sent.figures.estimated_tokens - text_estimated;
  // Worth learning when it lowers the worker's budget or this chat's own.
  const int64_t budget = std::max(budget_tokens(), sent.chat.policy.max_tokens);
  // A learned budget is the whole prompt's: the tools' declarations, left out of the server's
  // count here, come back (the engine leaves them room out of it again).
  const auto room = static_cast<int64_t>(kWindowShare * static_cast<double>(plateau)) + framing +
                    sent.figures.tools_tokens;
  const std::optional<int64_t> known =
      parts_.engine.learned_budget(parts_.config.openai_base_url, model());
  if (room >= budget || (known && *known <= room)) return;  // nothing to lower
  LearnedBudget l{parts_.config.openai_base_url,
                  model(),
                  room,
                  sent.figures.estimated_tokens,
                  std::nullopt,
                  o.result->usage->prompt_tokens,
                  std::nullopt,
                  parts_.clock.now()};
  l.budget_tokens = parts_.engine.learn_budget(
      l.endpoint, l.model, l.budget_tokens, std::nullopt,
      "silent window: twice the server's count stayed at about " +
          std::to_string(o.result->usage->prompt_tokens) + " while the chat's prompt grew");
  o.learned.push_back(l);
  if (!o.truncated)
    o.truncated = "the server counted " + std::to_string(o.result->usage->prompt_tokens) +
                  " prompt tokens, no more than for smaller prompts: it cuts prompts silently "
                  "(Ollama's num_ctx, a proxy's limit); learned budget_tokens=" +
                  std::to_string(l.budget_tokens) +
                  " for this endpoint and model; after raising the server's window, "
                  "`autonous context limits --clear` forgets it";
}

void Turn::calibrate(const queue::Task& task, TurnOutcome& o) {
  const openai::ChatResult& r = *o.result;
  const ContextStep& step = o.contexts.back();
  const engine::BuiltContext& sent = step.built;
  // The scale applies to the messages' text alone: the framing (the same on both sides, counted
  // by the family's template) is left out of the ratio, and so is the part the server adds
  // unseen as this build counted it (judged again below, from the count that includes it).
  const int64_t framing = parts_.counter.inner().per_request() +
                          parts_.counter.per_message() * static_cast<int64_t>(sent.messages.size());
  const int64_t estimated = sent.figures.estimated_tokens - framing - step.calibration_added;
  // The tools' declarations the server counted are left out of its count (the estimate has none
  // of them). A count under the cached part (a server that reports only the uncached one) is not
  // the prompt's.
  const int64_t declared = declared_tokens(sent.chat.policy.tools);
  const bool plausible =
      (!r.usage->cached_tokens || *r.usage->cached_tokens <= r.usage->prompt_tokens) &&
      r.usage->prompt_tokens > declared;
  const int64_t counted = r.usage->prompt_tokens - declared - framing;  // text and added part
  if (estimated < engine::kCalibrationMinTokens || counted <= 0 || !plausible) return;
  // Whether the server took the prompt whole (window_probe.h). Without a probe (a Turn built
  // without one, as in unit tests), a model of known window (a preset or CONTEXT_WINDOW) is
  // believed and one of unknown window is calibrated upward only.
  const double used = step.calibration_scale;
  WindowProbe::Verdict verdict{window_known(), std::nullopt, false, std::nullopt};
  if (parts_.probe != nullptr)
    verdict = parts_.probe->observe(probe_key(parts_, model()), task.chat_id,
                                    static_cast<int64_t>(static_cast<double>(estimated) / used),
                                    counted, window_known(), declared == 0, step.calibration_added);
  // A lower count lowers the scale, and a growth's implication moves the added part, only when
  // it can be trusted: not from a reply that looks cut (a server that truncates silently reports
  // its window, whatever was sent, and a lowered estimate would send more each turn) — unless
  // the count lies on the chat's line since its anchor, at its highest (window_probe.h): a scale
  // fitted to a hidden prompt inflates the estimate of a longer prompt, and its count then only
  // looks cut.
  if (verdict.on_line) o.truncated.reset();
  const bool lower = !o.truncated && verdict.whole;
  // The part is learned from requests without tools only (the probe reports none for the
  // others): the declarations' estimate, taken out of the count above, is not the server's count
  // of them.
  int64_t added =
      lower ? engine::added_next(step.calibration_added, verdict.added) : step.calibration_added;
  // A part that is all of a trusted count (a proxy that stopped adding it) is none.
  if (added >= counted && lower) added = 0;
  if (verdict.window) learn_silent_window(o, estimated + step.calibration_added, *verdict.window);
  if (added >= counted) return;          // a count under the part, not trusted: teaches nothing
  const int64_t text = counted - added;  // the server's count of the messages' text
  const bool higher = static_cast<double>(text) * (1.0 + engine::kCalibrationMargin) >
                      static_cast<double>(estimated);
  engine::CalibrationLesson lesson{{used, step.calibration_added, calibration_.proven},
                                   estimated,
                                   text,
                                   added,
                                   parts_.probe ? verdict.proven : 0};
  if (!higher && !lower) lesson.estimated = 0;  // the scale stays (calibration_next)
  if (higher || lower || added != step.calibration_added || lesson.proven > calibration_.proven)
    o.calibration_after = parts_.engine.calibrate(parts_.config.openai_base_url, model(), lesson);
}

void Turn::answered(const queue::Task& task, TurnOutcome& o) {
  const openai::ChatResult& r = *o.result;

  const int64_t estimated = o.contexts.back().built.figures.estimated_tokens;
  // The raw estimate may count English up to twice what a real tokenizer does: it needs a wider
  // margin before calling a low count a cut. A calibrated one (a scale other than 1) is aimed at
  // the server's own count: the exact counters' margin.
  const double ratio = o.contexts.back().built.figures.counter == "estimate" &&
                               o.contexts.back().calibration_scale == 1.0
                           ? kTruncationShareEstimated
                           : kTruncationShare;
  if (r.usage && estimated >= kTruncationFloor &&
      static_cast<double>(r.usage->prompt_tokens) < ratio * static_cast<double>(estimated))
    o.truncated = "the server counted " + std::to_string(r.usage->prompt_tokens) +
                  " prompt tokens for a prompt estimated at " + std::to_string(estimated) +
                  ": it may have cut the prompt silently (Ollama's num_ctx, a proxy's limit); "
                  "set MAX_CONTEXT_TOKENS or CONTEXT_WINDOW to the server's window";
  if (calibrating() && r.usage) {
    // Best effort: a database that refuses now must not cost the answer that arrived.
    try {
      calibrate(task, o);
    } catch (const std::exception& e) {
      spdlog::warn("storing the calibration failed; the answer is kept: {}", e.what());
    }
  }
  o.kind = Kind::kDone;
  o.finished_at = parts_.clock.now();
}

}  // namespace autonous::worker
