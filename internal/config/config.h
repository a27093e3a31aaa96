#pragma once
// Config: every environment variable autonous reads, parsed and validated once at start.
// Validation is strict: a bad value throws ConfigError naming the variable and what it expected.
// Reading the environment happens only through an EnvLookup, so tests pass a map.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "internal/config/listen_address.h"

namespace autonous::config {

// A bad or missing setting. `variable()` is the environment variable (or flag) at fault.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string variable, const std::string& message);
  const std::string& variable() const noexcept { return variable_; }

 private:
  std::string variable_;
};

enum class Synchronous { kFull, kNormal };
enum class LogFormat { kText, kJson };

inline constexpr std::string_view kDefaultSystemPrompt =
    "You are a helpful assistant. Answer clearly and concisely.";

struct Config {
  std::string db_path = "./autonous.db";
  // DATABASE_URL (postgresql://…): the PostgreSQL backend; empty selects SQLite at db_path.
  std::string database_url;
  // DATABASE_POOL_SIZE: PostgreSQL connections a process shares among its slots (and commands),
  // opened as needed (backend/postgres/pool.h). load_config's default when unset:
  // default_pool_size(usable_cores()) (pool_default.h); 8 is only a Config built by hand.
  int database_pool_size = 8;
  std::string openai_base_url;  // empty when unset; required by `worker` only
  std::string openai_api_key;   // never logged, never stored
  // OPENAI_API_KEY_HEADER: the header that carries the key as it is (empty: Authorization: Bearer).
  std::string openai_api_key_header;
  // OPENAI_EXTRA_HEADERS: sent on every call (config/http_headers.h); values never logged.
  std::vector<std::pair<std::string, std::string>> openai_extra_headers;
  // OPENAI_FALLBACK_MODEL: answers a task's remaining attempts once the main model's attempts
  // ended in FALLBACK_AFTER_FAILURES provider failures in a row (worker/fallback.h); "": none.
  std::string openai_fallback_model;
  int fallback_after_failures = 2;
  std::string openai_model = "gpt-4o-mini";
  std::string system_prompt = std::string(kDefaultSystemPrompt);
  int history_window = 100;
  // MAX_CONTEXT_TOKENS when set; unset: the model preset decides (engine/model_presets.h).
  std::optional<int64_t> max_context_tokens;
  // MAX_CHARS_PER_MESSAGE when set; unset: a history message may cost a quarter of the budget.
  std::optional<int64_t> max_chars_per_message;
  int worker_concurrency = 4;
  std::chrono::milliseconds poll_interval{500};
  std::chrono::seconds task_lease{300};
  int task_max_attempts = 5;
  std::chrono::seconds llm_timeout{120};
  int64_t max_response_bytes = 8 << 20;  // MAX_RESPONSE_BYTES, counted after decoding
  // Transient failures are retried while the task is this young (from its first claim), even
  // past TASK_MAX_ATTEMPTS: an outage of minutes loses no task. 0: the attempt cap alone.
  std::chrono::seconds retry_budget{600};
  std::string log_level = "info";
  LogFormat log_format = LogFormat::kText;
  Synchronous sqlite_synchronous = Synchronous::kFull;
  // Extensions beyond DESIGN.md's table.
  std::chrono::milliseconds sqlite_busy_timeout{30000};
  std::chrono::milliseconds retry_base{1000};
  std::chrono::milliseconds retry_max{60000};
  std::chrono::seconds shutdown_grace{30};
  std::string worker_id;  // empty: hostname:pid, chosen by the worker
  // Token counting: auto | cl100k_base | o200k_base | llama3 | qwen3 | deepseek_v3 | estimate |
  // chars4.
  std::string token_counter = "auto";
  // Unset: beside an installed binary (install_paths.h), else this.
  std::string tokenizer_data_dir = "/usr/local/share/autonous/tokenizer";
  // TOKENIZER_CACHE_DIR: the OpenAI encodings' built tables (bpe_ranks.h: load_cached); unset:
  // install_paths.h's default; off or "": none.
  std::string tokenizer_cache_dir;
  bool token_calibration = true;  // TOKEN_CALIBRATION: the estimator's scale per endpoint, model
  // Tools (#29): TOOLS_FILE names the declared tools ("" offers none); a task makes at most
  // TOOL_MAX_STEPS model calls; a result is read up to TOOL_RESULT_MAX_BYTES and stored cut to
  // TOOL_RESULT_MAX_TOKENS (0: a quarter of the prompt budget, at most kMaxToolResultTokens).
  std::string tools_file;
  int64_t tool_max_steps = 8;
  int64_t tool_result_max_tokens = 0;
  int64_t tool_result_max_bytes = 1 << 20;
  // The context engine (its validation of the whole policy is engine::validate, at start).
  std::string context_strategy = "token_budget";  // sliding_window | token_budget | summarize
  std::string context_compressor = "levels";      // levels | simple (no levels, only the fit)
  int64_t recent_message_count = 20;
  double soft_threshold = 0.70;
  double warn_threshold = 0.85;
  double hard_threshold = 0.95;
  double target_usage = 0.60;
  std::optional<int64_t> context_window;         // CONTEXT_WINDOW: overrides the preset
  std::optional<int64_t> reserve_output_tokens;  // RESERVE_OUTPUT_TOKENS: overrides the preset
  // MODELS_FILE: a JSON file of model presets (window, reserve, tokenizer, prices) put over the
  // shipped config/models.json; "" uses the shipped ones alone.
  std::string models_file;
  // The summarize strategy.
  std::string summary_model;  // SUMMARY_MODEL; empty: OPENAI_MODEL
  // SUMMARY_MAX_TOKENS; unset: a quarter of the prompt budget, at most 1 024
  // (engine::default_summary_max_tokens), so summarize runs at any budget it can.
  std::optional<int64_t> summary_max_tokens;
  std::optional<int64_t> keep_recent_tokens;  // unset: a quarter of the prompt budget
  // auto | classic | openai | reasoning | bare: how a summary call states its reply cap and
  // temperature (engine/model_presets.h: request_shape).
  std::string summary_request_shape = "auto";
  int keep_recent_messages = 6;  // KEEP_RECENT_MESSAGES: the floor no compaction folds or drops
  std::string context_layout = "default";  // CONTEXT_LAYOUT: default | sectioned | minimal
  // PROMPT_CACHE_KEY: auto (on for api.openai.com) | on | off: send OpenAI's prompt_cache_key
  // per chat (a hash of the chat id), so a chat's requests share the provider's prompt cache.
  std::string prompt_cache_key = "auto";
  // OPENAI_SEND_USER: on | off: send OpenAI's `user` field with each chat call (the same hash of
  // the chat id as prompt_cache_key, never the id), which LiteLLM and OpenAI attribute spend to.
  bool openai_send_user = false;
  // COST_PRICES: auto | on | off: whether calls are priced at config/models.json's list prices
  // (auto: only on the vendors' own API hosts, openai/endpoint.h).
  std::string cost_prices = "auto";
  // PROMPT_CACHE_RETENTION: "" (not sent) | in_memory | 24h: OpenAI's prompt_cache_retention.
  std::string prompt_cache_retention;
  // Recall (recall/recall.h, engine/allocator.h).
  bool recall = true;                  // RECALL=on|off
  double recall_share = 0.45;          // RECALL_SHARE
  int64_t recall_max_tokens = 3000;    // RECALL_MAX_TOKENS
  int recall_max_hits = 8;             // RECALL_MAX_HITS
  double recall_min_relevance = 0.25;  // RECALL_MIN_RELEVANCE
  double recall_recency_weight = 0.3;  // RECALL_RECENCY_WEIGHT
  double recall_recency_days = 30;     // RECALL_RECENCY_DAYS
  int recall_timeout_ms = 250;         // RECALL_TIMEOUT_MS
  // Optional vector search (worker/llm_embedder.h): off while the model is empty.
  std::string embedding_model;     // EMBEDDING_MODEL
  std::string embedding_base_url;  // EMBEDDING_BASE_URL (empty: OPENAI_BASE_URL's)
  std::string embedding_api_key;   // EMBEDDING_API_KEY (with EMBEDDING_BASE_URL); never logged
  std::string embedding_api_key_header;  // EMBEDDING_API_KEY_HEADER (with EMBEDDING_BASE_URL)
  std::vector<std::pair<std::string, std::string>>
      embedding_extra_headers;                        // EMBEDDING_EXTRA_HEADERS
  double embedding_min_similarity = 0.4;              // EMBEDDING_MIN_SIMILARITY
  std::chrono::milliseconds embedding_timeout{5000};  // EMBEDDING_TIMEOUT_MS
  // Front ends (#32): REPLY_WEBHOOK_URL ("" : no webhook) gets every ended task POSTed as JSON,
  // signed with REPLY_WEBHOOK_SECRET when set (worker/reply_webhook.h); a delivery is tried at
  // most REPLY_WEBHOOK_MAX_ATTEMPTS times, each within REPLY_WEBHOOK_TIMEOUT_MS.
  // TASK_ENDED_NOTIFY (PostgreSQL): NOTIFY autonous_task_ended when a task ends; a worker that
  // sets it writes it into the database (reply_delivery.notify) at start.
  std::string reply_webhook_url;
  std::string reply_webhook_secret;  // never logged
  int reply_webhook_max_attempts = 15;
  std::chrono::milliseconds reply_webhook_timeout{10000};
  // REPLY_WEBHOOK_RETRY_BASE_MS: the first retry's wait, doubling per attempt up to 5 minutes.
  std::chrono::milliseconds reply_webhook_retry_base{1000};
  std::optional<bool> task_ended_notify;  // unset: the database's setting stands (on)
  // STREAM_REPLIES=on: replies are asked for as streams and their text so far is written to
  // tasks.partial_reply at most every STREAM_FLUSH_MS.
  bool stream_replies = false;
  std::chrono::milliseconds stream_flush{250};
  // The operator surface (internal/ops): off while HTTP_LISTEN is unset.
  std::optional<ListenAddress> http_listen;  // HTTP_LISTEN
  std::string http_token;                    // HTTP_TOKEN: bearer; required off loopback
};

// Returns the value of an environment variable, or nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;

// The process environment (defined in env_file.cpp, beside layered_env).
EnvLookup process_env();

// Reads and validates every variable. Throws ConfigError for the first bad one.
Config load_config(const EnvLookup& env);

// Throws ConfigError("OPENAI_BASE_URL") when the worker's endpoint is not configured.
void require_llm_endpoint(const Config& config);

}  // namespace autonous::config
