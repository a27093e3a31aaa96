#pragma once
// The context engine, wired for one database connection: engine_settings() turns the
// environment's Config into the engine's settings (the prompt budget from MAX_CONTEXT_TOKENS or
// the model preset, the default policy) and refuses a bad combination naming the variable;
// Engine owns a backend's storage (engine_storage.h), the compressor, the assembler and
// the builder. The worker, the dry run (`autonous context`) and the benchmarks all build
// prompts through it, so what the dry run shows is what the worker would send.
// Not thread-safe: one Engine per connection (per worker slot).

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "internal/config/config.h"
#include "internal/engine/built_context.h"
#include "internal/engine/calibration_store.h"
#include "internal/engine/context_settings.h"
#include "internal/engine/model_presets.h"

namespace autonous::tokens {
class TokenCounter;
}
namespace autonous::recall {
class Embedder;
}
namespace autonous::engine {
class Summarizer;
}  // namespace autonous::engine

namespace autonous::engine {

class EngineStorage;

struct EngineSettings {
  ContextSettings context;
  PromptBudget budget;
  std::string summary_model;          // SUMMARY_MODEL, or OPENAI_MODEL
  int64_t summary_max_tokens = 0;     // SUMMARY_MAX_TOKENS, or default_summary_max_tokens()
  int64_t summary_window_budget = 0;  // the summary model's window − summary_max_tokens
  // SUMMARY_REQUEST_SHAPE, or the summary model's preset under auto.
  RequestShape summary_shape = RequestShape::kClassic;
  bool simple_compressor = false;  // CONTEXT_COMPRESSOR=simple: no levels, only the fit
};

// SUMMARY_MAX_TOKENS when unset: a quarter of the prompt budget, at most kDefaultSummaryMaxTokens
// and at least 64 (#28: 1 024 refused to start summarize at a 2 000-token budget).
inline constexpr int64_t kDefaultSummaryMaxTokens = 1024;
int64_t default_summary_max_tokens(int64_t prompt_budget) noexcept;

// Throws config::ConfigError naming the variable: thresholds out of order, a reserve that
// leaves no window, a budget too small for the system prompt and a minimal user message, a
// summarize budget under twice SUMMARY_MAX_TOKENS.
EngineSettings engine_settings(const config::Config& config, const tokens::TokenCounter& counter);

// The environment variable behind a PolicyError field.
std::string variable_for(const std::string& policy_field, const config::Config& config);

class Engine {
 public:
  // `summarizer` writes summaries under summarize; nullptr makes a dry run (the summary in use
  // and what a compaction would do are shown; nothing is called or written, the chat's state
  // included). `embedder` adds vector search to recall (EMBEDDING_MODEL; unused when recall is
  // off). `counter`, `summarizer` and `embedder` must outlive the engine. Throws PolicyError when
  // the settings' budget is too small.
  Engine(std::unique_ptr<EngineStorage> storage, const EngineSettings& settings,
         const tokens::TokenCounter& counter, Summarizer* summarizer = nullptr,
         recall::Embedder* embedder = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Indexes queued search rows of any chat for up to `budget` when recall is on (an idle
  // worker slot); returns how many. Throws the backend's exception.
  int64_t index_backlog(std::chrono::milliseconds budget) const;

  // The prompt for `user_text` in `chat_id` now. Throws the backend's exception on storage errors.
  BuiltContext build(const std::string& chat_id, const std::string& user_text,
                     const BuildOptions& options = {}) const;

  // Stores the chat's context state (and its prompt's stable blocks, for the delta builder, and
  // the token counts of history rows the build counted) and
  // indexes the turn's new history rows for search, after a build made with defer_commit, once
  // its prompt was answered, inside the caller's write
  // transaction (the turn's completion: the state and the reply are stored together or not at all);
  // nothing in a dry run. Throws the backend's exception.
  void write_state(const std::string& chat_id, const BuiltContext& built) const;

  // The estimator's stored calibration for `endpoint` (a base URL) and `model`
  // (calibration_store.h), and moving it after an answer's lesson: the calibration now stored.
  // Throw the backend's exception.
  Calibration calibration(const std::string& endpoint, const std::string& model) const;
  Calibration calibrate(const std::string& endpoint, const std::string& model,
                        const CalibrationLesson& lesson) const;

  // The prompt budget learned for `endpoint` and `model` from overflow answers
  // (context_state_store.h), and recording one; learning keeps the smaller budget and returns
  // the one stored. Throw the backend's exception.
  std::optional<int64_t> learned_budget(const std::string& endpoint,
                                        const std::string& model) const;
  int64_t learn_budget(const std::string& endpoint, const std::string& model, int64_t budget,
                       std::optional<int64_t> stated_limit, const std::string& message) const;

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
  bool dry_run_ = false;
  bool recall_ = false;
};

}  // namespace autonous::engine
