#include "internal/engine/engine.h"

#include <algorithm>
#include <stdexcept>

#include "internal/engine/assembler.h"
#include "internal/engine/context_builder.h"
#include "internal/engine/context_state_store.h"
#include "internal/engine/engine_storage.h"
#include "internal/engine/level_compressor.h"
#include "internal/engine/simple_compressor.h"

namespace autonous::engine {

std::string variable_for(const std::string& field, const config::Config& config) {
  if (field == kKeyMaxTokens && !config.max_context_tokens && config.context_window)
    return "CONTEXT_WINDOW";
  const PolicyField* f = find_policy_field(field);
  return f != nullptr ? std::string(f->variable) : "MAX_CONTEXT_TOKENS";
}

namespace {

PromptBudget prompt_budget(const config::Config& config) {
  try {
    return resolve_prompt_budget({config.openai_model, config.max_context_tokens,
                                  config.context_window, config.reserve_output_tokens});
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError("RESERVE_OUTPUT_TOKENS", e.what());
  }
}

// The summary model's own window, its reply room being the summary call's cap. The chat model's
// CONTEXT_WINDOW applies to it too when it is the same model.
int64_t summary_window_budget(const config::Config& config, const std::string& summary_model,
                              RequestShape shape, int64_t summary_max_tokens) {
  const bool same = config.summary_model.empty() || config.summary_model == config.openai_model;
  // A reasoning model's reply cap also holds its hidden reasoning: the window keeps room for it.
  const int64_t reply = reply_cap(shape, summary_max_tokens);
  try {
    return resolve_prompt_budget(
               {summary_model, std::nullopt, same ? config.context_window : std::nullopt, reply})
        .tokens;
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError("SUMMARY_MAX_TOKENS", e.what());
  }
}

}  // namespace

int64_t default_summary_max_tokens(int64_t prompt_budget) noexcept {
  return std::clamp<int64_t>(prompt_budget / 4, 64, kDefaultSummaryMaxTokens);
}

EngineSettings engine_settings(const config::Config& config, const tokens::TokenCounter& counter) {
  EngineSettings out;
  out.budget = prompt_budget(config);
  ContextSettings& s = out.context;
  s.system_prompt = config.system_prompt;
  s.history_window = config.history_window;
  s.max_chars_per_message = config.max_chars_per_message.value_or(0);
  s.keep_recent_messages = config.keep_recent_messages;
  s.ceiling = out.budget.ceiling;
  s.model = config.openai_model;
  s.max_context_tokens = config.max_context_tokens;
  s.policy.strategy = parse_strategy(config.context_strategy).value_or(Strategy::kTokenBudget);
  s.policy.max_tokens = out.budget.tokens;
  s.policy.recent_messages = config.recent_message_count;
  s.policy.thresholds = {config.soft_threshold, config.warn_threshold, config.hard_threshold,
                         config.target_usage};
  s.summary.keep_recent_tokens = config.keep_recent_tokens.value_or(0);
  out.summary_max_tokens =
      config.summary_max_tokens.value_or(default_summary_max_tokens(out.budget.tokens));
  s.summary.max_tokens = out.summary_max_tokens;
  s.layout = parse_layout(config.context_layout).value_or(Layout::kDefault);
  s.recall.enabled = config.recall;
  s.recall.share = config.recall_share;
  s.recall.max_tokens = config.recall_max_tokens;
  s.recall.max_hits = config.recall_max_hits;
  s.recall.min_relevance = config.recall_min_relevance;
  s.recall.relevance_weight = 1.0 - config.recall_recency_weight;
  s.recall.recency_days = config.recall_recency_days;
  s.recall.timeout_ms = config.recall_timeout_ms;
  s.recall.min_similarity = config.embedding_min_similarity;
  try {
    check_budget(s, counter);
  } catch (const PolicyError& e) {
    throw config::ConfigError(variable_for(e.field(), config), e.what());
  }
  try {
    check_summary_room(s);
  } catch (const PolicyError&) {
    throw config::ConfigError("SUMMARY_MAX_TOKENS",
                              std::to_string(out.summary_max_tokens) +
                                  " leaves too little of the " + std::to_string(out.budget.tokens) +
                                  "-token prompt budget: a summary may take at most half of it");
  }
  out.summary_model = config.summary_model.empty() ? config.openai_model : config.summary_model;
  out.summary_shape =
      parse_request_shape(config.summary_request_shape).value_or(request_shape(out.summary_model));
  out.summary_window_budget =
      summary_window_budget(config, out.summary_model, out.summary_shape, out.summary_max_tokens);
  out.simple_compressor = config.context_compressor == "simple";
  return out;
}

struct Engine::Parts {
  Parts(std::unique_ptr<EngineStorage> st, const EngineSettings& settings,
        const tokens::TokenCounter& counter, Summarizer* summarizer, recall::Embedder* embedder)
      : storage(std::move(st)),
        floor_budget(min_budget(settings.context.system_prompt, counter)),
        levels(counter),
        simple(counter),
        builder(settings.context, storage->provider(),
                settings.simple_compressor ? static_cast<const Compressor&>(simple) : levels,
                assembler, counter, seams(*storage, settings, summarizer, embedder)) {}
  // The builder's seams, composed once: recall's only when recall is on.
  static BuilderSeams seams(EngineStorage& storage, const EngineSettings& settings,
                            Summarizer* summarizer, recall::Embedder* embedder) {
    const bool recall = settings.context.recall.enabled;
    return {.summaries = &storage.summaries(),
            .summarizer = summarizer,
            .searcher = recall ? &storage.searcher() : nullptr,
            .embedder = recall ? embedder : nullptr};
  }
  std::unique_ptr<EngineStorage> storage;
  int64_t floor_budget;  // the least budget: holds the system prompt and a user message
  LevelCompressor levels;
  SimpleCompressor simple;
  StandardAssembler assembler;
  ContextBuilder builder;
};

Engine::Engine(std::unique_ptr<EngineStorage> storage, const EngineSettings& settings,
               const tokens::TokenCounter& counter, Summarizer* summarizer,
               recall::Embedder* embedder)
    : parts_(std::make_unique<Parts>(std::move(storage), settings, counter, summarizer, embedder)),
      dry_run_(summarizer == nullptr),
      recall_(settings.context.recall.enabled) {}

Engine::~Engine() = default;

int64_t Engine::index_backlog(std::chrono::milliseconds budget) const {
  return recall_ && !dry_run_ ? parts_->storage->index_backlog(budget) : 0;
}

BuiltContext Engine::build(const std::string& chat_id, const std::string& user_text,
                           const BuildOptions& options) const {
  BuildOptions o = options;
  o.dry_run = o.dry_run || dry_run_;
  return parts_->builder.build(chat_id, user_text, o);
}

void Engine::write_state(const std::string& chat_id, const BuiltContext& built) const {
  if (dry_run_) return;
  parts_->storage->index_in_transaction(chat_id);  // the pair this transaction just stored
  if (ContextBuilder::state_changed(built))
    parts_->storage->write_context_state(chat_id, built.state.after);
  if (built.delta.records != built.chat.blocks)
    parts_->storage->write_blocks(chat_id, built.delta.records);
  if (!built.counted.empty()) parts_->storage->write_token_counts(built.counted_by, built.counted);
}

Calibration Engine::calibration(const std::string& endpoint, const std::string& model) const {
  return parts_->storage->calibration(endpoint_key(endpoint), model);
}

std::optional<int64_t> Engine::learned_budget(const std::string& endpoint,
                                              const std::string& model) const {
  const std::optional<LearnedLimit> l =
      parts_->storage->learned_limit(endpoint_key(endpoint), model);
  if (!l) return std::nullopt;
  return l->budget_tokens;
}

int64_t Engine::learn_budget(const std::string& endpoint, const std::string& model, int64_t budget,
                             std::optional<int64_t> stated_limit,
                             const std::string& message) const {
  // Never below what holds the system prompt and a minimal user message: repeated guesses
  // without a stated window must not shrink it towards nothing.
  budget = std::max(budget, parts_->floor_budget);
  return parts_->storage->learn_limit(endpoint_key(endpoint), model,
                                      {budget, stated_limit, message, {}});
}

Calibration Engine::calibrate(const std::string& endpoint, const std::string& model,
                              const CalibrationLesson& lesson) const {
  return parts_->storage->calibrate(endpoint_key(endpoint), model, lesson);
}

}  // namespace autonous::engine
