#include "internal/store/engine.h"

#include <algorithm>
#include <stdexcept>

#include "internal/context/assembler.h"
#include "internal/context/context_builder.h"
#include "internal/context/level_compressor.h"
#include "internal/context/simple_compressor.h"
#include "internal/store/context_state_store.h"
#include "internal/store/engine_storage.h"

namespace autonous::store {

std::string variable_for(const std::string& field, const config::Config& config) {
  if (field == context::kKeyMaxTokens && !config.max_context_tokens && config.context_window)
    return "CONTEXT_WINDOW";
  const context::PolicyField* f = context::find_policy_field(field);
  return f != nullptr ? std::string(f->variable) : "MAX_CONTEXT_TOKENS";
}

namespace {

context::PromptBudget prompt_budget(const config::Config& config) {
  try {
    return context::resolve_prompt_budget({config.openai_model, config.max_context_tokens,
                                           config.context_window, config.reserve_output_tokens});
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError("RESERVE_OUTPUT_TOKENS", e.what());
  }
}

// The summary model's own window, its reply room being the summary call's cap. The chat model's
// CONTEXT_WINDOW applies to it too when it is the same model.
int64_t summary_window_budget(const config::Config& config, const std::string& summary_model,
                              context::RequestShape shape) {
  const bool same = config.summary_model.empty() || config.summary_model == config.openai_model;
  // A reasoning model's reply cap also holds its hidden reasoning: the window keeps room for it.
  const int64_t reply = context::reply_cap(shape, config.summary_max_tokens);
  try {
    return context::resolve_prompt_budget(
               {summary_model, std::nullopt, same ? config.context_window : std::nullopt, reply})
        .tokens;
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError("SUMMARY_MAX_TOKENS", e.what());
  }
}

}  // namespace

EngineSettings engine_settings(const config::Config& config, const tokens::TokenCounter& counter) {
  EngineSettings out;
  out.budget = prompt_budget(config);
  context::ContextSettings& s = out.context;
  s.system_prompt = config.system_prompt;
  s.history_window = config.history_window;
  s.max_chars_per_message = config.max_chars_per_message.value_or(0);
  s.keep_recent_messages = config.keep_recent_messages;
  s.ceiling = out.budget.ceiling;
  s.policy.strategy =
      context::parse_strategy(config.context_strategy).value_or(context::Strategy::kTokenBudget);
  s.policy.max_tokens = out.budget.tokens;
  s.policy.recent_messages = config.recent_message_count;
  s.policy.thresholds = {config.soft_threshold, config.warn_threshold, config.hard_threshold,
                         config.target_usage};
  s.summary.keep_recent_tokens = config.keep_recent_tokens.value_or(0);
  s.summary.max_tokens = config.summary_max_tokens;
  s.layout = context::parse_layout(config.context_layout).value_or(context::Layout::kDefault);
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
    context::check_budget(s, counter);
  } catch (const context::PolicyError& e) {
    throw config::ConfigError(variable_for(e.field(), config), e.what());
  }
  try {
    context::check_summary_room(s);
  } catch (const context::PolicyError&) {
    throw config::ConfigError("SUMMARY_MAX_TOKENS",
                              std::to_string(config.summary_max_tokens) +
                                  " leaves too little of the " + std::to_string(out.budget.tokens) +
                                  "-token prompt budget: a summary may take at most half of it");
  }
  out.summary_model = config.summary_model.empty() ? config.openai_model : config.summary_model;
  out.summary_shape = context::parse_request_shape(config.summary_request_shape)
                          .value_or(context::request_shape(out.summary_model));
  out.summary_window_budget = summary_window_budget(config, out.summary_model, out.summary_shape);
  out.simple_compressor = config.context_compressor == "simple";
  return out;
}

struct Engine::Parts {
  Parts(std::unique_ptr<EngineStorage> st, const EngineSettings& settings,
        const tokens::TokenCounter& counter)
      : storage(std::move(st)),
        floor_budget(context::min_budget(settings.context.system_prompt, counter)),
        levels(counter),
        simple(counter),
        builder(
            settings.context, storage->provider(),
            settings.simple_compressor ? static_cast<const context::Compressor&>(simple) : levels,
            assembler, counter) {}
  std::unique_ptr<EngineStorage> storage;
  int64_t floor_budget;  // the least budget: holds the system prompt and a user message
  context::LevelCompressor levels;
  context::SimpleCompressor simple;
  context::StandardAssembler assembler;
  context::ContextBuilder builder;
};

Engine::Engine(std::unique_ptr<EngineStorage> storage, const EngineSettings& settings,
               const tokens::TokenCounter& counter, context::Summarizer* summarizer)
    : parts_(std::make_unique<Parts>(std::move(storage), settings, counter)),
      dry_run_(summarizer == nullptr),
      recall_(settings.context.recall.enabled) {
  parts_->builder.enable_summaries(parts_->storage->summaries(), summarizer);
  if (recall_) parts_->builder.enable_recall(parts_->storage->searcher());
}

Engine::~Engine() = default;

int64_t Engine::index_backlog(std::chrono::milliseconds budget) const {
  return recall_ && !dry_run_ ? parts_->storage->index_backlog(budget) : 0;
}

void Engine::enable_embeddings(context::Embedder& embedder) {
  if (recall_) parts_->builder.enable_embeddings(embedder);
}

context::BuiltContext Engine::build(const std::string& chat_id, const std::string& user_text,
                                    const context::BuildOptions& options) const {
  context::BuildOptions o = options;
  o.dry_run = o.dry_run || dry_run_;
  return parts_->builder.build(chat_id, user_text, o);
}

void Engine::write_state(const std::string& chat_id, const context::BuiltContext& built) const {
  if (dry_run_) return;
  parts_->storage->index_in_transaction(chat_id);  // the pair this transaction just stored
  if (context::ContextBuilder::state_changed(built))
    parts_->storage->write_context_state(chat_id, built.state.after);
  if (built.delta.records != built.chat.blocks)
    parts_->storage->write_blocks(chat_id, built.delta.records);
}

double Engine::calibration_scale(const std::string& model) const {
  return parts_->storage->calibration_scale(model);
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

double Engine::raise_calibration(const std::string& model, double scale_used, int64_t estimated,
                                 int64_t actual) const {
  return parts_->storage->raise_calibration(model, scale_used, estimated, actual);
}

}  // namespace autonous::store
