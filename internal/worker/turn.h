#pragma once
// Turn: one claimed task, from context to outcome. Builds the prompt through the slot's engine,
// calls the LLM (when the provider says the prompt is too long: learns the endpoint's budget,
// stores it for later turns, compacts into it and tries again, at most kMaxRebuilds times),
// calibrates the estimator when enabled, and classifies a failure into retry later or fail.
// Returns a TurnOutcome; it never writes the task (the slot applies the outcome). Not
// thread-safe: one per worker slot.

#include <chrono>
#include <functional>
#include <random>

#include "internal/config/config.h"
#include "internal/engine/model_presets.h"
#include "internal/events/event_log.h"
#include "internal/queue/task.h"
#include "internal/tools/http_tool.h"
#include "internal/worker/turn_outcome.h"

namespace autonous::common {
class Clock;
}
namespace autonous::openai {
class Client;
class Error;
class ApiError;
struct Overflow;
struct CallOptions;
}  // namespace autonous::openai
namespace autonous::engine {
class Engine;
}
namespace autonous::tokens {
class ScaledCounter;
}
namespace autonous::tools {
class Toolset;
}

namespace autonous::worker {

class LlmSummarizer;
class WindowProbe;

// What a turn uses; every reference must outlive the Turn.
struct TurnParts {
  const config::Config& config;
  engine::Engine& engine;  // the prompt, and the estimator's calibration
  openai::Client& client;
  LlmSummarizer& summarizer;
  tokens::ScaledCounter& counter;  // the engine's counter; scaled when calibrating
  // TOKEN_CALIBRATION: the estimator's scale is learned and applied (only while the counter a
  // turn counts with is the estimate).
  bool calibrate = false;
  const common::Clock& clock;
  // True for a database error that passes by itself (backend::Session::transient): the turn
  // gives the task back (kRelease, reason "database_unavailable") instead of counting an
  // attempt. Unset: every storage error counts.
  std::function<bool(const std::exception&)> db_transient = {};
  // Shared by the worker's slots: with calibration on, a model of unknown window is calibrated
  // both ways and its prompts grow only as far as this allows (window_probe.h). Unset: such a
  // model is calibrated upward only.
  WindowProbe* probe = nullptr;
  // The declared tools (TOOLS_FILE), offered on every call when not empty, and how an HTTP tool
  // is called: thread-safe, the calls of one reply run at once (a transport per call). Unset: no
  // tools.
  const tools::Toolset* toolset = nullptr;
  std::function<tools::HttpAnswer(const tools::HttpCall&)> tool_post = {};
  // The task's llm.retry events (OPENAI_FALLBACK_MODEL's rule, worker/fallback.h); read only
  // when a fallback model is set and the attempt could be one. Unset: the main model always.
  std::function<std::vector<events::StoredEvent>(int64_t task_id)> retries = {};
  // The counter for a chat's own model (`chat set --model`, #31). Unset: the counter's own
  // for every model.
  std::function<const tokens::TokenCounter&(const std::string& model)> counter_for = {};
  // STREAM_REPLIES: writes a streamed reply's text so far into the task's row (TaskQueue::
  // set_partial); false when the lease is lost. Unset: replies are not streamed.
  std::function<bool(const queue::Task&, const std::string&)> write_partial = {};
};

// The window probe's key: the endpoint and the model, as the calibration's.
std::string probe_key(const TurnParts& parts, const std::string& model);
// The budget rule's inputs for `model`: the environment's for OPENAI_MODEL; for another (the
// fallback) its preset's window, with MAX_CONTEXT_TOKENS still capping it.
engine::BudgetInputs budget_inputs(const config::Config& c, const std::string& model);

// A result is stored cut to TOOL_RESULT_MAX_TOKENS, or when 0 to a quarter of the prompt budget
// and at most this (Codex's cap on a stored tool output).
inline constexpr int64_t kMaxToolResultTokens = 10'000;
// A result is never cut below this (the room the budget leaves may be less).
inline constexpr int64_t kMinToolResultTokens = 64;
// Calls past this in one reply are not run (their result says so).
inline constexpr size_t kMaxToolCallsPerReply = 16;
// A task's tool calls stop being run once they took this long together.
inline constexpr std::chrono::milliseconds kMaxToolTimePerTask{300'000};
// Arguments over this are not sent (the call's result says so; stored as {}).
inline constexpr size_t kMaxToolArgumentBytes = 64u << 10;
// A call id is kept when it is 1 to this many of A-Z a-z 0-9 _ - . : (else made up).
inline constexpr size_t kMaxToolCallIdBytes = 64;
// What an older result in the same turn is sent as when the steps outgrow the budget.
inline constexpr std::string_view kClearedResult = "[result cleared to fit the prompt budget]";

// After an overflow answer the turn rebuilds at most this many times.
inline constexpr int kMaxRebuilds = 2;
// A probable overflow (an unknown wording, openai::Overflow::probable) is tried again only when
// the rebuild costs at most kProbableSmaller of the refused prompt, and what it teaches is never
// below 1/kProbableLearnShare of the budget it refused.
inline constexpr double kProbableSmaller = 0.9;
inline constexpr int64_t kProbableLearnShare = 2;
// A prompt of at least kTruncationFloor tokens that the server counted at under this share of
// our count was probably cut by the server (Ollama's num_ctx): a warning event says so. With
// the estimator (which may count English up to twice too high) the share is smaller.
inline constexpr double kTruncationShare = 0.6;
inline constexpr double kTruncationShareEstimated = 0.34;
inline constexpr int64_t kTruncationFloor = 2048;

// The budget to learn from an overflow answer: the window it states, a quarter left for the
// reply, converted to the engine's tokens by the server's count of the refused prompt; without
// a stated window, `target` of the budget refused. Always under what was sent.
int64_t fitted_budget(int64_t sent_tokens, int64_t budget_tokens, double target,
                      const openai::Overflow& said);

class Turn {
 public:
  explicit Turn(TurnParts parts);

  // Runs `task`'s turn. `keep_going` is polled during every HTTP call: false aborts the call
  // (shutdown, or the lease was lost, which `lease_lost` then says). Never throws for the
  // task's own failures: they are outcomes.
  TurnOutcome run(const queue::Task& task, const std::function<bool()>& keep_going,
                  const std::function<bool()>& lease_lost);

  // Turns a database_unavailable release (the database failed the build) into a counted retry
  // or a failure: the slot does so when the same task keeps being given back.
  void count_database_failure(TurnOutcome& outcome);

  // Turns a done outcome whose completion transaction threw into a retry (or a failure once
  // the attempts are spent): the reply was received, the turn did not complete.
  void commit_failed(TurnOutcome& outcome, const std::exception& error);

 private:
  ContextStep build(const queue::Task& task, const engine::BuildOptions& options,
                    const std::function<bool()>& keep_going);
  // The chat call's options: the tools offered to the chat (`tools`: its own list, when it has
  // one) and PROMPT_CACHE_KEY's per-chat key where it applies.
  openai::CallOptions call_options(const std::string& chat_id,
                                   const engine::ToolNames& tools) const;
  // STREAM_REPLIES on: `call` streams, its text so far written to the task's partial_reply at
  // most every STREAM_FLUSH_MS (turn_stream.cpp).
  void stream_into(openai::CallOptions& call, const queue::Task& task) const;
  // The answer arrived: warns of a silent truncation, calibrates, completes.
  // A task no call can answer (leases expired TASK_MAX_ATTEMPTS times, a chat id that is not
  // text): `o` failed, true.
  bool refused_before_any_call(const queue::Task& task, TurnOutcome& o) const;
  // The chat call for the last built context; a context-overflow answer rebuilds smaller and
  // tries again (at most kMaxRebuilds; a probable one once, learned only when answered). Throws
  // what the call throws when it gives up.
  void call_with_rebuilds(const queue::Task& task, engine::BuildOptions options,
                          const std::function<bool()>& keep_going,
                          std::chrono::steady_clock::time_point call_started, TurnOutcome& o);
  void answered(const queue::Task& task, TurnOutcome& o);
  // The tool loop (turn_tools.cpp): while the reply calls tools and TOOL_MAX_STEPS allows, runs
  // them, appends the calls and results (o.steps) and calls the model again; the last allowed
  // call answers in text (tool_choice none). Throws what a model call throws.
  void run_tools(const queue::Task& task, const std::function<bool()>& keep_going, TurnOutcome& o);
  ToolRun run_tool(const openai::ToolCall& call, const engine::ToolNames& tools,
                   const std::function<bool()>& keep_going, common::Message& result);
  // The reply's first `count` calls, run at once (each on its own thread; one runs on this one)
  // while this thread keeps the lease; their runs and results in the calls' order. Throws
  // openai::aborted_error when the lease was lost or a hard stop came, what a call threw.
  void run_calls(const openai::ChatResult& asked, size_t count, const engine::ToolNames& tools,
                 const std::function<bool()>& keep_going, std::vector<ToolRun>& runs,
                 std::vector<common::Message>& results);
  // One step's calls run (at most kMaxToolCallsPerReply, within kMaxToolTimePerTask), their
  // results cut to `cap` and to the room left, appended to o.steps.
  void run_step(const openai::ChatResult& asked, size_t step, int64_t cap,
                std::chrono::milliseconds& spent, const std::function<bool()>& keep_going,
                TurnOutcome& o);
  // The next request: the built prompt, then the steps; while over the budget earlier steps'
  // results cleared, then the oldest history left out a user turn at a time, then the question
  // cut in the middle.
  std::vector<common::Message> next_request(const openai::ChatResult& asked,
                                            const TurnOutcome& o) const;
  // The cap on a stored result's tokens for this turn.
  int64_t result_cap(const engine::BuiltContext& built) const;
  // Whether the model's window is known (its preset or CONTEXT_WINDOW): the calibration may
  // then lower the estimator's scale without a probe.
  bool window_known() const;
  // The worker's prompt budget (engine tokens); 0 when it cannot be resolved.
  int64_t budget_tokens() const;
  // What the declarations of the tools offered (`tools`: a chat's own list) cost in every
  // request (0 without tools).
  int64_t declared_tokens(const engine::ToolNames& tools) const;
  // Whether the probe caps this model's prompts: calibrating, a probe, the window unknown.
  bool probing() const;
  // A silent window seen by the probe (the count `plateau` it keeps the server at): learned as
  // the endpoint's budget. Throws what storing it throws.
  void learn_silent_window(TurnOutcome& o, int64_t text_estimated, int64_t plateau);
  // Learns (and stores) the budget an overflow answer allows; returns the budget stored.
  int64_t learn(TurnOutcome& o, const openai::ApiError& e, bool store = true);
  void classify(TurnOutcome& o, const openai::Error& e, std::chrono::milliseconds latency,
                bool lease_lost);
  void retry_or_fail(TurnOutcome& o, TurnFailure failure);

  // The model of the attempt under way: OPENAI_MODEL, or OPENAI_FALLBACK_MODEL (fallback.h).
  const std::string& model() const;
  // Chooses the attempt's model (model_), saying so in `o` when it is the fallback.
  void choose_model(const queue::Task& task, TurnOutcome& o);
  // A chat with a model of its own: the attempt uses it (unless the fallback answers), with its
  // counter, calibration and learned caps (BuildOptions::chat_model).
  std::optional<engine::ModelCaps> use_chat_model(const std::string& model, TurnOutcome& o);
  // Calibrating now: TOKEN_CALIBRATION and the turn counts with the estimate.
  bool calibrating() const;
  // Sets the counter's scale and added part to the model's stored calibration when calibrating,
  // to none otherwise.
  void apply_calibration();
  // After an answer with a usage figure, when calibrating: the calibration moved toward the
  // server's count (the scale and the added part), a silent window learned.
  void calibrate(const queue::Task& task, TurnOutcome& o);

  TurnParts parts_;
  std::mt19937_64 rng_;
  std::string model_;
  const tokens::TokenCounter* default_inner_ = nullptr;  // the counter's inner at construction
  std::optional<int64_t> chat_messages_cap_;  // the chat model's probe cap, for a rebuild
  engine::Calibration calibration_;  // the model's stored calibration, as apply_calibration read it
};

}  // namespace autonous::worker
