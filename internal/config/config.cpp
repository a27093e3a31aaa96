#include "internal/config/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include <arpa/inet.h>

#include "internal/common/text.h"
#include "internal/config/api_key.h"
#include "internal/config/http_headers.h"
#include "internal/config/install_paths.h"
#include "internal/config/pool_default.h"

namespace autonous::config {
namespace {

using common::trim;
std::string lower(std::string s) { return common::to_lower_ascii(std::move(s)); }

// Reads an integer variable in [lo, hi]; unset or empty keeps `fallback`.
int64_t read_int(const EnvLookup& env, std::string_view name, int64_t fallback, int64_t lo,
                 int64_t hi) {
  const auto raw = env(name);
  if (!raw) return fallback;
  const std::string v = trim(*raw);
  if (v.empty()) return fallback;
  int64_t out = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  const std::string expect =
      "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  if (ec == std::errc::result_out_of_range)
    throw ConfigError(std::string(name), "'" + v + "' is out of range; " + expect);
  if (ec != std::errc() || ptr != v.data() + v.size())
    throw ConfigError(std::string(name), "'" + v + "' is not an integer; " + expect);
  if (out < lo || out > hi)
    throw ConfigError(std::string(name), "'" + v + "' is out of range; " + expect);
  return out;
}

std::optional<int64_t> read_optional_int(const EnvLookup& env, std::string_view name, int64_t lo,
                                         int64_t hi) {
  const auto raw = env(name);
  if (!raw || trim(*raw).empty()) return std::nullopt;
  return read_int(env, name, 0, lo, hi);
}

// Reads a share in (0, 1]; unset or empty keeps `fallback`.
double read_share(const EnvLookup& env, std::string_view name, double fallback) {
  const auto raw = env(name);
  if (!raw) return fallback;
  const std::string v = trim(*raw);
  if (v.empty()) return fallback;
  double out = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || !(out > 0.0 && out <= 1.0))
    throw ConfigError(std::string(name), "'" + v + "' is not a number in (0, 1], e.g. 0.85");
  return out;
}

std::string read_string(const EnvLookup& env, std::string_view name, std::string fallback) {
  const auto raw = env(name);
  if (!raw || raw->empty()) return fallback;
  return *raw;
}

}  // namespace

ConfigError::ConfigError(std::string variable, const std::string& message)
    : std::runtime_error(variable + ": " + message), variable_(std::move(variable)) {}

namespace {

// Reads one of `options` (case-insensitive); unset or empty keeps `fallback`. The error lists
// the options as `shown` (e.g. "FULL, NORMAL"), or as given.
std::string read_choice(const EnvLookup& env, std::string_view name, const std::string& fallback,
                        std::initializer_list<std::string_view> options,
                        std::string_view shown = {}) {
  const std::string v = lower(trim(read_string(env, name, fallback)));
  if (std::find(options.begin(), options.end(), v) != options.end()) return v;
  std::string list(shown);
  if (list.empty())
    for (const auto o : options) list += (list.empty() ? "" : ", ") + std::string(o);
  throw ConfigError(std::string(name), "'" + v + "' is not one of " + list);
}

// No control characters in what reaches HTTP headers (a CR/LF would inject one); not echoed.
void refuse_control_characters(std::string_view name, const std::string& value) {
  for (size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7F)
      throw ConfigError(std::string(name), "holds a control character (byte " + std::to_string(c) +
                                               " at position " + std::to_string(i) +
                                               "); header values cannot carry one");
  }
}

// A DNS name or IPv4 address: dot-separated labels of letters, digits, '-' and '_', none
// empty, none longer than 63, none starting or ending with '-'.
bool valid_hostname(const std::string& host) {
  if (host.size() > 253) return false;
  size_t start = 0;
  while (start <= host.size()) {
    const size_t end = std::min(host.find('.', start), host.size());
    const std::string label = host.substr(start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
      return false;
    for (const char c : label)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) return false;
    start = end + 1;
  }
  return true;
}

// What is wrong with the host[:port] of a URL, or "" when nothing is.
std::string authority_problem(const std::string& authority) {
  std::string host = authority;
  std::string port;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string::npos) return "has an unclosed [";
    host = authority.substr(1, close - 1);
    in6_addr address{};
    if (inet_pton(AF_INET6, host.c_str(), &address) != 1) return "has a bad IPv6 host";
    const std::string rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return "has text after the IPv6 host";
    if (!rest.empty() && rest.size() == 1) return "has a bad port";
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const size_t colon = authority.find(':');
    if (colon != std::string::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
      if (port.empty()) return "has a bad port";
    }
    if (host.empty()) return "has no host";
    if (!valid_hostname(host)) return "has a bad host";
  }
  if (!port.empty() &&
      (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
       std::stoi(port) == 0 || std::stoi(port) > 65535))
    return "has a bad port";
  return "";
}

// scheme://host[:port][/path][?query], http or https, no user info, fragment or whitespace. A
// query (Azure's ?api-version=…) is kept: the client puts it after /chat/completions.
void check_base_url(const std::string& url, const char* name = "OPENAI_BASE_URL") {
  const std::string l = lower(url);
  const size_t scheme = l.rfind("https://", 0) == 0 ? 8 : l.rfind("http://", 0) == 0 ? 7 : 0;
  // A query may hold a gateway's subscription key: never echoed.
  const bool webhook = std::string(name) == "REPLY_WEBHOOK_URL";
  // User info may hold a password: shown as "…@".
  std::string shown =
      url.find('?') == std::string::npos ? url : url.substr(0, url.find('?')) + "?…";
  if (const size_t at = shown.find('@', scheme);
      at != std::string::npos && scheme > 0 && at < shown.find('/', scheme))
    shown = shown.substr(0, scheme) + "…" + shown.substr(at);
  const auto refuse = [&](const std::string& why) {
    throw ConfigError(name,
                      "'" + shown + "' " + why + "; expected e.g. " +
                          (webhook ? "https://bot.example.com/hook" : "https://api.openai.com/v1"));
  };
  if (scheme == 0) refuse("is not an http:// or https:// URL");
  refuse_control_characters(name, url);
  if (url.find_first_of(" \t") != std::string::npos) refuse("holds whitespace");
  if (url.find('#') != std::string::npos) refuse("has a fragment");
  if (url.find('?') != std::string::npos && url.find('?') + 1 == url.size())
    refuse("ends with an empty query");
  const size_t host_end = std::min(url.find_first_of("/?", scheme), url.size());
  const std::string authority = url.substr(scheme, host_end - scheme);
  if (authority.find('@') != std::string::npos)
    refuse(webhook ? std::string("carries user info (sign with REPLY_WEBHOOK_SECRET instead)")
                   : std::string("carries user info (put the key in ") +
                         (std::string(name) == "OPENAI_BASE_URL" ? "OPENAI_API_KEY"
                                                                 : "EMBEDDING_API_KEY") +
                         ")");
  if (url.find('\\') != std::string::npos) refuse("holds a backslash");
  if (const std::string why = authority_problem(authority); !why.empty()) refuse(why);
}

// The URL's path without its trailing slashes, the query kept: https://h/v1/?q=1 → …/v1?q=1.
std::string without_trailing_slashes(const std::string& url) {
  const size_t q = std::min(url.find('?'), url.size());
  std::string path = url.substr(0, q);
  while (!path.empty() && path.back() == '/') path.pop_back();
  return path + url.substr(q);
}

void read_llm(const EnvLookup& env, Config& c) {
  c.openai_base_url = trim(read_string(env, "OPENAI_BASE_URL", ""));
  if (!c.openai_base_url.empty()) {
    check_base_url(c.openai_base_url);
    c.openai_base_url = without_trailing_slashes(c.openai_base_url);
  }
  c.openai_api_key = read_api_key(env);
  refuse_control_characters("OPENAI_API_KEY", c.openai_api_key);
  c.openai_api_key_header = trim(read_string(env, "OPENAI_API_KEY_HEADER", ""));
  if (!c.openai_api_key_header.empty())
    check_header_name("OPENAI_API_KEY_HEADER", c.openai_api_key_header);
  c.openai_extra_headers =
      parse_extra_headers("OPENAI_EXTRA_HEADERS", read_string(env, "OPENAI_EXTRA_HEADERS", ""),
                          c.openai_api_key_header, !c.openai_api_key.empty());
  c.openai_model = trim(read_string(env, "OPENAI_MODEL", c.openai_model));
  refuse_control_characters("OPENAI_MODEL", c.openai_model);
  c.openai_fallback_model = trim(read_string(env, "OPENAI_FALLBACK_MODEL", ""));
  refuse_control_characters("OPENAI_FALLBACK_MODEL", c.openai_fallback_model);
  if (!c.openai_fallback_model.empty() && c.openai_fallback_model == c.openai_model)
    throw ConfigError("OPENAI_FALLBACK_MODEL", "is OPENAI_MODEL itself; name another model");
  c.fallback_after_failures = static_cast<int>(
      read_int(env, "FALLBACK_AFTER_FAILURES", c.fallback_after_failures, 1, 1000));
  c.system_prompt = read_string(env, "SYSTEM_PROMPT", c.system_prompt);
}

void read_prompt_limits(const EnvLookup& env, Config& c) {
  c.history_window = static_cast<int>(read_int(env, "HISTORY_WINDOW", c.history_window, 0, 100000));
  c.max_context_tokens = read_optional_int(env, "MAX_CONTEXT_TOKENS", 1, 100'000'000);
  c.max_chars_per_message = read_optional_int(env, "MAX_CHARS_PER_MESSAGE", 1, 100'000'000);
}

void read_worker(const EnvLookup& env, Config& c) {
  c.worker_concurrency =
      static_cast<int>(read_int(env, "WORKER_CONCURRENCY", c.worker_concurrency, 1, 256));
  c.poll_interval = std::chrono::milliseconds(
      read_int(env, "POLL_INTERVAL_MS", c.poll_interval.count(), 1, 3'600'000));
  c.task_lease =
      std::chrono::seconds(read_int(env, "TASK_LEASE_SECONDS", c.task_lease.count(), 1, 86400));
  c.task_max_attempts =
      static_cast<int>(read_int(env, "TASK_MAX_ATTEMPTS", c.task_max_attempts, 1, 1000));
  c.llm_timeout =
      std::chrono::seconds(read_int(env, "LLM_TIMEOUT_SECONDS", c.llm_timeout.count(), 1, 86400));
  c.max_response_bytes =
      read_int(env, "MAX_RESPONSE_BYTES", c.max_response_bytes, 4096, int64_t{1} << 30);
}

void read_retries(const EnvLookup& env, Config& c) {
  c.retry_base =
      std::chrono::milliseconds(read_int(env, "RETRY_BASE_MS", c.retry_base.count(), 1, 3'600'000));
  c.retry_max = std::chrono::milliseconds(
      read_int(env, "RETRY_MAX_SECONDS", c.retry_max.count() / 1000, 1, 86400) * 1000);
  if (c.retry_max < c.retry_base)
    throw ConfigError("RETRY_MAX_SECONDS", "must not be less than RETRY_BASE_MS");
  c.retry_budget = std::chrono::seconds(
      read_int(env, "RETRY_BUDGET_SECONDS", c.retry_budget.count(), 0, 7 * 86400));
  c.shutdown_grace = std::chrono::seconds(
      read_int(env, "SHUTDOWN_GRACE_SECONDS", c.shutdown_grace.count(), 0, 86400));
  c.worker_id = trim(read_string(env, "WORKER_ID", ""));
}

void read_logging_and_storage(const EnvLookup& env, Config& c) {
  c.log_level = read_choice(env, "LOG_LEVEL", c.log_level,
                            {"trace", "debug", "info", "warn", "error", "critical", "off"});
  c.log_format = read_choice(env, "LOG_FORMAT", "text", {"text", "json"}) == "json"
                     ? LogFormat::kJson
                     : LogFormat::kText;
  c.sqlite_synchronous =
      read_choice(env, "SQLITE_SYNCHRONOUS", "FULL", {"full", "normal"}, "FULL, NORMAL") == "full"
          ? Synchronous::kFull
          : Synchronous::kNormal;
  c.sqlite_busy_timeout = std::chrono::milliseconds(
      read_int(env, "SQLITE_BUSY_TIMEOUT_MS", c.sqlite_busy_timeout.count(), 100, 3'600'000));
}

void read_tokens(const EnvLookup& env, Config& c) {
  c.token_counter = read_choice(env, "TOKEN_COUNTER", c.token_counter,
                                {"auto", "cl100k_base", "o200k_base", "llama3", "qwen3",
                                 "deepseek_v3", "estimate", "chars4"});
  c.tokenizer_data_dir =
      read_string(env, "TOKENIZER_DATA_DIR", tokenizer_dir_beside_binary(c.tokenizer_data_dir));
  c.tokenizer_cache_dir = tokenizer_cache_dir(
      read_string(env, "TOKENIZER_CACHE_DIR", ""), env("CACHE_DIRECTORY").value_or(""),
      env("XDG_CACHE_HOME").value_or(""), env("HOME").value_or(""));
  c.models_file = trim(read_string(env, "MODELS_FILE", ""));
  c.token_calibration = read_choice(env, "TOKEN_CALIBRATION", "on", {"on", "off"}) == "on";
}

void read_tools(const EnvLookup& env, Config& c) {
  c.tools_file = read_string(env, "TOOLS_FILE", c.tools_file);
  c.tool_max_steps = read_int(env, "TOOL_MAX_STEPS", c.tool_max_steps, 1, 64);
  c.tool_result_max_tokens =
      read_int(env, "TOOL_RESULT_MAX_TOKENS", c.tool_result_max_tokens, 0, 1'000'000);
  c.tool_result_max_bytes =
      read_int(env, "TOOL_RESULT_MAX_BYTES", c.tool_result_max_bytes, 1024, 64 << 20);
}

void read_context(const EnvLookup& env, Config& c) {
  c.context_strategy = read_choice(env, "CONTEXT_STRATEGY", c.context_strategy,
                                   {"sliding_window", "token_budget", "summarize"});
  c.context_compressor =
      read_choice(env, "CONTEXT_COMPRESSOR", c.context_compressor, {"levels", "simple"});
  c.recent_message_count = read_int(env, "RECENT_MESSAGE_COUNT", c.recent_message_count, 1, 100000);
  c.soft_threshold = read_share(env, "CONTEXT_SOFT_THRESHOLD", c.soft_threshold);
  c.warn_threshold = read_share(env, "CONTEXT_WARN_THRESHOLD", c.warn_threshold);
  c.hard_threshold = read_share(env, "CONTEXT_HARD_THRESHOLD", c.hard_threshold);
  c.target_usage = read_share(env, "CONTEXT_TARGET", c.target_usage);
  c.context_window = read_optional_int(env, "CONTEXT_WINDOW", 16, 100'000'000);
  c.reserve_output_tokens = read_optional_int(env, "RESERVE_OUTPUT_TOKENS", 0, 100'000'000);
  c.summary_model = trim(read_string(env, "SUMMARY_MODEL", ""));
  c.summary_max_tokens = read_optional_int(env, "SUMMARY_MAX_TOKENS", 64, 1'000'000);
  c.keep_recent_tokens = read_optional_int(env, "KEEP_RECENT_TOKENS", 0, 100'000'000);
  c.summary_request_shape = read_choice(env, "SUMMARY_REQUEST_SHAPE", c.summary_request_shape,
                                        {"auto", "classic", "openai", "reasoning", "bare"});
  c.keep_recent_messages =
      static_cast<int>(read_int(env, "KEEP_RECENT_MESSAGES", c.keep_recent_messages, 0, 100000));
}

void read_recall(const EnvLookup& env, Config& c) {
  c.context_layout =
      read_choice(env, "CONTEXT_LAYOUT", c.context_layout, {"default", "sectioned", "minimal"});
  c.prompt_cache_key =
      read_choice(env, "PROMPT_CACHE_KEY", c.prompt_cache_key, {"auto", "on", "off"});
  c.openai_send_user = read_choice(env, "OPENAI_SEND_USER", "off", {"on", "off"}) == "on";
  c.cost_prices = read_choice(env, "COST_PRICES", c.cost_prices, {"auto", "on", "off"});
  c.prompt_cache_retention =
      read_choice(env, "PROMPT_CACHE_RETENTION", "", {"", "in_memory", "24h"},
                  "in_memory, 24h (or unset: not sent)");
  c.recall = read_choice(env, "RECALL", "on", {"on", "off"}) == "on";
  c.recall_share = read_share(env, "RECALL_SHARE", c.recall_share);
  if (c.recall_share > 0.9) throw ConfigError("RECALL_SHARE", "must be at most 0.9");
  c.recall_max_tokens = read_int(env, "RECALL_MAX_TOKENS", c.recall_max_tokens, 0, 10'000'000);
  c.recall_max_hits = static_cast<int>(read_int(env, "RECALL_MAX_HITS", c.recall_max_hits, 0, 100));
  c.recall_min_relevance = read_share(env, "RECALL_MIN_RELEVANCE", c.recall_min_relevance);
  c.recall_recency_weight = read_share(env, "RECALL_RECENCY_WEIGHT", c.recall_recency_weight);
  c.recall_recency_days = static_cast<double>(read_int(env, "RECALL_RECENCY_DAYS", 30, 1, 36500));
  c.recall_timeout_ms =
      static_cast<int>(read_int(env, "RECALL_TIMEOUT_MS", c.recall_timeout_ms, 1, 60000));
  c.embedding_model = trim(read_string(env, "EMBEDDING_MODEL", ""));
  // Embeddings from another endpoint (a chat provider without /v1/embeddings): its own key,
  // never OPENAI_API_KEY, which is not sent to another host.
  c.embedding_base_url = trim(read_string(env, "EMBEDDING_BASE_URL", ""));
  if (!c.embedding_base_url.empty()) {
    check_base_url(c.embedding_base_url, "EMBEDDING_BASE_URL");
    c.embedding_base_url = without_trailing_slashes(c.embedding_base_url);
  }
  c.embedding_api_key = trim(read_string(env, "EMBEDDING_API_KEY", ""));
  refuse_control_characters("EMBEDDING_API_KEY", c.embedding_api_key);
  if (!c.embedding_base_url.empty() && c.embedding_model.empty())
    throw ConfigError("EMBEDDING_BASE_URL",
                      "is set without EMBEDDING_MODEL: embeddings are off; set the model too");
  if (!c.embedding_api_key.empty() && c.embedding_base_url.empty())
    throw ConfigError("EMBEDDING_API_KEY",
                      "is set without EMBEDDING_BASE_URL: the embeddings go to OPENAI_BASE_URL "
                      "with OPENAI_API_KEY; set EMBEDDING_BASE_URL for another endpoint");
  c.embedding_api_key_header = trim(read_string(env, "EMBEDDING_API_KEY_HEADER", ""));
  if (!c.embedding_api_key_header.empty())
    check_header_name("EMBEDDING_API_KEY_HEADER", c.embedding_api_key_header);
  c.embedding_extra_headers = parse_extra_headers(
      "EMBEDDING_EXTRA_HEADERS", read_string(env, "EMBEDDING_EXTRA_HEADERS", ""),
      c.embedding_api_key_header, !c.embedding_api_key.empty());
  for (const char* v : {"EMBEDDING_API_KEY_HEADER", "EMBEDDING_EXTRA_HEADERS"})
    if (c.embedding_base_url.empty() && !trim(read_string(env, v, "")).empty())
      throw ConfigError(v,
                        "is set without EMBEDDING_BASE_URL: the embeddings go to OPENAI_BASE_URL "
                        "with OPENAI_API_KEY_HEADER and OPENAI_EXTRA_HEADERS");
  c.embedding_min_similarity =
      read_share(env, "EMBEDDING_MIN_SIMILARITY", c.embedding_min_similarity);
  c.embedding_timeout = std::chrono::milliseconds(
      read_int(env, "EMBEDDING_TIMEOUT_MS", c.embedding_timeout.count(), 100, 120000));
}

void read_http(const EnvLookup& env, Config& c) {
  c.http_token = trim(read_string(env, "HTTP_TOKEN", ""));
  const std::string listen = trim(read_string(env, "HTTP_LISTEN", ""));
  if (listen.empty()) return;
  try {
    c.http_listen = parse_listen_address(listen);
  } catch (const std::invalid_argument& e) {
    throw ConfigError("HTTP_LISTEN", e.what());
  }
  check_listen_token(*c.http_listen, c.http_token);
}

void read_front_end(const EnvLookup& env, Config& c) {
  c.reply_webhook_url = trim(read_string(env, "REPLY_WEBHOOK_URL", ""));
  if (!c.reply_webhook_url.empty()) check_base_url(c.reply_webhook_url, "REPLY_WEBHOOK_URL");
  c.reply_webhook_secret = read_string(env, "REPLY_WEBHOOK_SECRET", "");
  if (!c.reply_webhook_secret.empty() && c.reply_webhook_url.empty())
    throw ConfigError("REPLY_WEBHOOK_SECRET", "is set without REPLY_WEBHOOK_URL");
  c.reply_webhook_max_attempts = static_cast<int>(
      read_int(env, "REPLY_WEBHOOK_MAX_ATTEMPTS", c.reply_webhook_max_attempts, 1, 1000));
  c.reply_webhook_timeout = std::chrono::milliseconds(
      read_int(env, "REPLY_WEBHOOK_TIMEOUT_MS", c.reply_webhook_timeout.count(), 100, 600000));
  c.reply_webhook_retry_base = std::chrono::milliseconds(read_int(
      env, "REPLY_WEBHOOK_RETRY_BASE_MS", c.reply_webhook_retry_base.count(), 1, 3'600'000));
  if (!trim(read_string(env, "TASK_ENDED_NOTIFY", "")).empty())
    c.task_ended_notify = read_choice(env, "TASK_ENDED_NOTIFY", "on", {"on", "off"}) == "on";
  c.stream_replies = read_choice(env, "STREAM_REPLIES", "off", {"on", "off"}) == "on";
  c.stream_flush = std::chrono::milliseconds(
      read_int(env, "STREAM_FLUSH_MS", c.stream_flush.count(), 10, 60'000));
}

// DATABASE_URL selects PostgreSQL; DB_PATH (or its default) SQLite. Both set is a mistake.
void read_database(const EnvLookup& env, Config& c) {
  c.db_path = read_string(env, "DB_PATH", c.db_path);
  c.database_url = trim(read_string(env, "DATABASE_URL", ""));
  c.database_pool_size = static_cast<int>(
      read_int(env, "DATABASE_POOL_SIZE", default_pool_size(usable_cores()), 1, 256));
  if (c.database_url.empty()) return;
  if (!c.database_url.starts_with("postgresql://") && !c.database_url.starts_with("postgres://"))
    throw ConfigError(
        "DATABASE_URL",
        "must be a postgresql:// URL, e.g. postgresql://autonous@db.internal/autonous "
        "(DB_PATH selects SQLite)");
  if (env("DB_PATH").has_value())
    throw ConfigError("DATABASE_URL",
                      "is set and so is DB_PATH: set one (DATABASE_URL selects PostgreSQL, DB_PATH "
                      "SQLite)");
}

}  // namespace

Config load_config(const EnvLookup& env) {
  Config c;
  read_database(env, c);
  // In the order the variables were always checked: the first bad one is the one named.
  read_llm(env, c);
  read_prompt_limits(env, c);
  read_worker(env, c);
  read_logging_and_storage(env, c);
  read_retries(env, c);
  read_tokens(env, c);
  read_tools(env, c);
  read_context(env, c);
  read_recall(env, c);
  read_http(env, c);
  read_front_end(env, c);
  // Azure OpenAI's classic URL names the deployment, which picks the model: the request's model
  // is ignored, so a fallback model named there would call the same deployment again.
  if (!c.openai_fallback_model.empty() &&
      lower(c.openai_base_url).find("/openai/deployments/") != std::string::npos)
    throw ConfigError("OPENAI_FALLBACK_MODEL",
                      "cannot work with an Azure OpenAI deployment URL (the deployment in "
                      "OPENAI_BASE_URL picks the model, not the request); use Azure's v1 API "
                      "(…/openai/v1, the deployment's name as the model) for a fallback");
  return c;
}

void require_llm_endpoint(const Config& config) {
  if (config.openai_base_url.empty())
    throw ConfigError("OPENAI_BASE_URL",
                      "is required by `worker`, e.g. https://api.openai.com/v1 (/chat/completions "
                      "is appended)");
}

}  // namespace autonous::config
