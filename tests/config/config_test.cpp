#include "internal/config/config.h"

#include <fstream>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "internal/config/pool_default.h"

namespace autonous::config {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    const auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// Expects load_config to refuse `value` for `variable`, naming the variable.
void expect_refused(const std::string& variable, const std::string& value) {
  try {
    load_config(env_of({{variable, value}}));
    ADD_FAILURE() << variable << "=" << value << " was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.variable(), variable);
    EXPECT_NE(std::string(e.what()).find(variable), std::string::npos) << e.what();
  }
}

TEST(ConfigTest, DefaultsMatchDesign) {
  const Config c = load_config(env_of({}));
  EXPECT_EQ(c.db_path, "./autonous.db");
  EXPECT_EQ(c.openai_base_url, "");
  EXPECT_EQ(c.openai_api_key, "");
  EXPECT_EQ(c.openai_model, "gpt-4o-mini");
  EXPECT_FALSE(c.system_prompt.empty());
  EXPECT_EQ(c.history_window, 100);
  EXPECT_FALSE(c.max_context_tokens.has_value());  // unset: the model preset decides
  EXPECT_FALSE(c.max_chars_per_message.has_value());
  EXPECT_EQ(c.keep_recent_messages, 6);
  EXPECT_EQ(c.summary_request_shape, "auto");
  EXPECT_EQ(c.worker_concurrency, 4);
  EXPECT_EQ(c.poll_interval.count(), 500);
  EXPECT_EQ(c.task_lease.count(), 300);
  EXPECT_EQ(c.task_max_attempts, 5);
  EXPECT_EQ(c.llm_timeout.count(), 120);
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.log_format, LogFormat::kText);
  EXPECT_EQ(c.sqlite_synchronous, Synchronous::kFull);
  EXPECT_EQ(c.retry_base.count(), 1000);
  EXPECT_EQ(c.retry_max.count(), 60000);
}

TEST(ConfigTest, ReadsEveryVariable) {
  const Config c = load_config(
      env_of({{"DB_PATH", "/tmp/x.db"},        {"OPENAI_BASE_URL", "http://127.0.0.1:9/v1/"},
              {"OPENAI_API_KEY", "sk-test"},   {"OPENAI_MODEL", "llama3"},
              {"SYSTEM_PROMPT", "Be brief."},  {"HISTORY_WINDOW", "7"},
              {"MAX_CONTEXT_TOKENS", "1234"},  {"MAX_CHARS_PER_MESSAGE", "99"},
              {"WORKER_CONCURRENCY", "32"},    {"POLL_INTERVAL_MS", "25"},
              {"TASK_LEASE_SECONDS", "60"},    {"TASK_MAX_ATTEMPTS", "3"},
              {"LLM_TIMEOUT_SECONDS", "9"},    {"LOG_LEVEL", "DEBUG"},
              {"LOG_FORMAT", "json"},          {"SQLITE_SYNCHRONOUS", "normal"},
              {"RETRY_BASE_MS", "50"},         {"RETRY_MAX_SECONDS", "2"},
              {"SHUTDOWN_GRACE_SECONDS", "0"}, {"WORKER_ID", "w1"}}));
  EXPECT_EQ(c.db_path, "/tmp/x.db");
  EXPECT_EQ(c.openai_base_url, "http://127.0.0.1:9/v1");  // trailing slash dropped
  EXPECT_EQ(c.openai_api_key, "sk-test");
  EXPECT_EQ(c.openai_model, "llama3");
  EXPECT_EQ(c.system_prompt, "Be brief.");
  EXPECT_EQ(c.history_window, 7);
  EXPECT_EQ(c.max_context_tokens, 1234);
  EXPECT_EQ(c.max_chars_per_message, 99);
  EXPECT_EQ(c.worker_concurrency, 32);
  EXPECT_EQ(c.poll_interval.count(), 25);
  EXPECT_EQ(c.task_lease.count(), 60);
  EXPECT_EQ(c.task_max_attempts, 3);
  EXPECT_EQ(c.llm_timeout.count(), 9);
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.log_format, LogFormat::kJson);
  EXPECT_EQ(c.sqlite_synchronous, Synchronous::kNormal);
  EXPECT_EQ(c.retry_base.count(), 50);
  EXPECT_EQ(c.retry_max.count(), 2000);
  EXPECT_EQ(c.shutdown_grace.count(), 0);
  EXPECT_EQ(c.worker_id, "w1");
}

TEST(ConfigTest, TheKeyComesFromAFileWhenOpenaiApiKeyFileNamesOne) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/key") << "  sk-from-file  \nsecond line ignored\n";
  EXPECT_EQ(load_config(env_of({{"OPENAI_API_KEY_FILE", dir + "/key"}})).openai_api_key,
            "sk-from-file");
  EXPECT_EQ(load_config(env_of({{"OPENAI_API_KEY", "sk-env"}})).openai_api_key, "sk-env");
  std::ofstream(dir + "/empty") << "\n  \n";
  for (const auto& [vars, why] :
       std::vector<std::pair<std::map<std::string, std::string>, std::string>>{
           {{{"OPENAI_API_KEY_FILE", dir + "/key"}, {"OPENAI_API_KEY", "sk-env"}}, "set one"},
           {{{"OPENAI_API_KEY_FILE", dir + "/missing"}}, "cannot be read"},
           {{{"OPENAI_API_KEY_FILE", dir}}, "cannot be read"},  // a folder
           {{{"OPENAI_API_KEY_FILE", dir + "/empty"}}, "holds no key"}}) {
    try {
      load_config(env_of(vars));
      ADD_FAILURE() << why;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.variable(), "OPENAI_API_KEY_FILE");
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("sk-"), std::string::npos) << e.what();  // no key shown
    }
  }
}

TEST(ConfigTest, EmptyValueMeansDefault) {
  const Config c = load_config(env_of({{"HISTORY_WINDOW", ""}, {"OPENAI_MODEL", ""}}));
  EXPECT_EQ(c.history_window, 100);
  EXPECT_EQ(c.openai_model, "gpt-4o-mini");
}

TEST(ConfigTest, RefusesNonNumbersTrailingGarbageAndOutOfRange) {
  for (const char* var :
       {"HISTORY_WINDOW", "MAX_CONTEXT_TOKENS", "MAX_CHARS_PER_MESSAGE", "WORKER_CONCURRENCY",
        "POLL_INTERVAL_MS", "TASK_LEASE_SECONDS", "TASK_MAX_ATTEMPTS", "LLM_TIMEOUT_SECONDS",
        "RETRY_BASE_MS", "RETRY_MAX_SECONDS", "SQLITE_BUSY_TIMEOUT_MS", "SHUTDOWN_GRACE_SECONDS",
        "DATABASE_POOL_SIZE"}) {
    SCOPED_TRACE(var);
    expect_refused(var, "abc");
    expect_refused(var, "10x");
    expect_refused(var, "1.5");
    expect_refused(var, "-1");
    expect_refused(var, "99999999999999999999999");
  }
}

TEST(ConfigTest, RefusesZeroWhereItMakesNoSense) {
  for (const char* var :
       {"MAX_CONTEXT_TOKENS", "MAX_CHARS_PER_MESSAGE", "WORKER_CONCURRENCY", "POLL_INTERVAL_MS",
        "TASK_LEASE_SECONDS", "TASK_MAX_ATTEMPTS", "LLM_TIMEOUT_SECONDS", "RETRY_BASE_MS",
        "RETRY_MAX_SECONDS", "DATABASE_POOL_SIZE"}) {
    SCOPED_TRACE(var);
    expect_refused(var, "0");
  }
  // Zero history is a stateless bot, and zero grace means abort at once: both allowed.
  EXPECT_EQ(load_config(env_of({{"HISTORY_WINDOW", "0"}})).history_window, 0);
  EXPECT_EQ(load_config(env_of({{"SHUTDOWN_GRACE_SECONDS", "0"}})).shutdown_grace.count(), 0);
}

TEST(ConfigTest, RefusesValuesAboveTheirMaximum) {
  expect_refused("WORKER_CONCURRENCY", "257");
  expect_refused("DATABASE_POOL_SIZE", "257");
  EXPECT_EQ(load_config(env_of({})).database_pool_size, default_pool_size(usable_cores()));
  EXPECT_EQ(load_config(env_of({{"DATABASE_POOL_SIZE", "3"}})).database_pool_size, 3);
  expect_refused("HISTORY_WINDOW", "100001");
  expect_refused("TASK_LEASE_SECONDS", "86401");
}

TEST(ConfigTest, ThePoolIsTwoConnectionsACoreBetweenFourAndEight) {
  EXPECT_EQ(default_pool_size(1), 4);
  EXPECT_EQ(default_pool_size(2), 4);
  EXPECT_EQ(default_pool_size(3), 6);
  EXPECT_EQ(default_pool_size(4), 8);
  EXPECT_EQ(default_pool_size(16), 8);
  EXPECT_EQ(default_pool_size(0), 8);  // unknown
  EXPECT_GE(usable_cores(), 1U);
}

TEST(ConfigTest, TheTokenizerCacheIsSystemdsThenXdgsThenHomesAndOffTurnsItOff) {
  const auto dir = [](std::map<std::string, std::string> env) {
    return load_config(env_of(std::move(env))).tokenizer_cache_dir;
  };
  EXPECT_EQ(dir({{"HOME", "/home/a"}}), "/home/a/.cache/autonous/tokenizer");
  EXPECT_EQ(dir({{"HOME", "/home/a"}, {"XDG_CACHE_HOME", "/x"}}), "/x/autonous/tokenizer");
  EXPECT_EQ(dir({{"HOME", "/home/a"}, {"XDG_CACHE_HOME", "x"}}),  // relative: ignored
            "/home/a/.cache/autonous/tokenizer");
  EXPECT_EQ(dir({{"CACHE_DIRECTORY", "/var/cache/b:/var/cache/autonous"}, {"HOME", "/h"}}),
            "/var/cache/autonous/tokenizer");
  EXPECT_EQ(dir({{"CACHE_DIRECTORY", "/var/cache/other"}, {"HOME", "/h"}}),  // another service's
            "/h/.cache/autonous/tokenizer");
  EXPECT_EQ(dir({}), "");  // nowhere to keep it
  EXPECT_EQ(dir({{"HOME", "/h"}, {"TOKENIZER_CACHE_DIR", " /srv/c "}}), "/srv/c");
  EXPECT_EQ(dir({{"HOME", "/h"}, {"TOKENIZER_CACHE_DIR", "OFF"}}), "");
  EXPECT_EQ(dir({{"HOME", "/h"}, {"TOKENIZER_CACHE_DIR", "  "}}),  // blank: unset
            "/h/.cache/autonous/tokenizer");
  expect_refused("TOKENIZER_CACHE_DIR", "cache");  // relative: where would it land?
  expect_refused("TOKENIZER_CACHE_DIR", "none");
}

TEST(ConfigTest, EmbeddingsAreOffByDefaultAndTheirSettingsAreChecked) {
  const Config d = load_config(env_of({}));
  EXPECT_TRUE(d.embedding_model.empty());
  EXPECT_DOUBLE_EQ(d.embedding_min_similarity, 0.4);
  EXPECT_EQ(d.embedding_timeout.count(), 5000);
  const Config c = load_config(env_of({{"EMBEDDING_MODEL", " text-embedding-3-small "},
                                       {"EMBEDDING_MIN_SIMILARITY", "0.25"},
                                       {"EMBEDDING_TIMEOUT_MS", "800"}}));
  EXPECT_EQ(c.embedding_model, "text-embedding-3-small");
  EXPECT_DOUBLE_EQ(c.embedding_min_similarity, 0.25);
  EXPECT_EQ(c.embedding_timeout.count(), 800);
  expect_refused("EMBEDDING_MIN_SIMILARITY", "1.5");
  expect_refused("EMBEDDING_MIN_SIMILARITY", "x");
  expect_refused("EMBEDDING_TIMEOUT_MS", "50");
  expect_refused("EMBEDDING_TIMEOUT_MS", "120001");
  expect_refused("EMBEDDING_BASE_URL", "ftp://x/v1");
  expect_refused("EMBEDDING_BASE_URL", "https://key@x/v1");
  expect_refused("EMBEDDING_API_KEY", "sk-alone");  // without EMBEDDING_BASE_URL: refused
  expect_refused("EMBEDDING_BASE_URL", "https://embed.example/v1");  // without EMBEDDING_MODEL
  const Config own = load_config(env_of({{"EMBEDDING_MODEL", "m"},
                                         {"EMBEDDING_BASE_URL", "https://embed.example/v1/"},
                                         {"EMBEDDING_API_KEY", "sk-e"}}));
  EXPECT_EQ(own.embedding_base_url, "https://embed.example/v1");
  EXPECT_EQ(own.embedding_api_key, "sk-e");
}

TEST(ConfigTest, RefusesUnknownEnumValues) {
  expect_refused("LOG_LEVEL", "verbose");
  expect_refused("LOG_FORMAT", "xml");
  expect_refused("SQLITE_SYNCHRONOUS", "OFF");
  expect_refused("OPENAI_SEND_USER", "yes");
  expect_refused("PROMPT_CACHE_RETENTION", "1h");
  expect_refused("OPENAI_BASE_URL", "ftp://example.com");
  expect_refused("OPENAI_BASE_URL", "127.0.0.1:8080/v1");
}

TEST(ConfigTest, TokenCounterChoicesAndDataDir) {
  EXPECT_EQ(load_config(env_of({})).token_counter, "auto");
  for (const char* v : {"auto", "cl100k_base", "o200k_base", "estimate", "chars4", "O200K_BASE"})
    EXPECT_NO_THROW(load_config(env_of({{"TOKEN_COUNTER", v}}))) << v;
  expect_refused("TOKEN_COUNTER", "p50k_base");
  expect_refused("TOKEN_COUNTER", "exact");
  EXPECT_EQ(load_config(env_of({{"TOKENIZER_DATA_DIR", "/opt/t"}})).tokenizer_data_dir, "/opt/t");
  EXPECT_TRUE(load_config(env_of({})).token_calibration);  // on by default (#28)
  EXPECT_TRUE(load_config(env_of({{"TOKEN_CALIBRATION", "on"}})).token_calibration);
  EXPECT_FALSE(load_config(env_of({{"TOKEN_CALIBRATION", "OFF"}})).token_calibration);
  expect_refused("TOKEN_CALIBRATION", "yes");
}

TEST(ConfigTest, RetryMaxMustNotBeBelowBase) {
  EXPECT_NO_THROW(load_config(env_of({{"RETRY_MAX_SECONDS", "1"}})));  // equal to the 1 s base
  try {
    load_config(env_of({{"RETRY_BASE_MS", "5000"}, {"RETRY_MAX_SECONDS", "2"}}));
    ADD_FAILURE() << "accepted a cap below the base";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.variable(), "RETRY_MAX_SECONDS");
  }
}

TEST(ConfigTest, BaseUrlIsRequiredOnlyByTheWorker) {
  const Config c = load_config(env_of({}));
  try {
    require_llm_endpoint(c);
    ADD_FAILURE() << "no error without OPENAI_BASE_URL";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.variable(), "OPENAI_BASE_URL");
  }
  EXPECT_NO_THROW(require_llm_endpoint(load_config(env_of({{"OPENAI_BASE_URL", "https://x/v1"}}))));
}

TEST(ConfigTest, ErrorMessagesNeverEchoTheApiKey) {
  // The key is read as-is; no validation error can carry it.
  const Config c = load_config(env_of({{"OPENAI_API_KEY", " sk-secret \n"}}));
  EXPECT_EQ(c.openai_api_key, "sk-secret");
}

TEST(ConfigTest, ControlCharactersInHeaderValuesAreRefusedWithoutEchoingThem) {
  // A CR/LF inside the key would inject a second header (e.g. Host:) into every request.
  for (const std::string& key : std::vector<std::string>{"sk-a\r\nHost: evil", "sk-a\nb",
                                                         std::string("sk-a\0b", 6), "sk-a\x7f"}) {
    try {
      (void)load_config(env_of({{"OPENAI_API_KEY", key}}));
      ADD_FAILURE() << "accepted a control character";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.variable(), "OPENAI_API_KEY");
      EXPECT_EQ(std::string(e.what()).find("sk-a"), std::string::npos) << e.what();
    }
  }
  expect_refused("OPENAI_MODEL", "gpt-4o\r\nX: y");
}

TEST(ConfigTest, BaseUrlIsValidatedWhole) {
  for (const char* bad : {"http://",
                          "https://exa mple.com/v1",
                          "https://x/v1?",
                          "https://x/v1#frag",
                          "https://x/v1?api-version=1#frag",
                          "https://u@x?api-version=1",
                          "https://user:pw@x/v1",
                          "https://x:0/v1",
                          "https://x:99999/v1",
                          "https://x:ab/v1",
                          "http://x/v1\r\nHost: y",
                          "https:///v1",
                          "http://:80/v1",
                          "http://[::1]:abc/v1",
                          "http://h:80:80/v1",
                          "http://h\\evil/v1",
                          "http://[::1/v1",
                          "http://h$x/v1",
                          "http://[:::::]/v1",
                          "http://[1.2.3.4]/v1",
                          "http://-/v1",
                          "http://./v1",
                          "http://.../v1",
                          "http://h..x/v1",
                          "http://-h.x/v1"})
    expect_refused("OPENAI_BASE_URL", bad);
  for (const char* good : {"http://127.0.0.1:8080/v1", "https://api.openai.com/v1/",
                           "https://[::1]:8443/v1", "HTTPS://X.example/openai/deployments/d"})
    EXPECT_NO_THROW((void)load_config(env_of({{"OPENAI_BASE_URL", good}}))) << good;
  // A query is kept (Azure's api-version), trailing slashes of the path go.
  EXPECT_EQ(load_config(env_of({{"OPENAI_BASE_URL",
                                 "https://r.openai.azure.com/openai/deployments/d/?api-version="
                                 "2024-10-21"}}))
                .openai_base_url,
            "https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21");
  EXPECT_EQ(load_config(env_of({{"OPENAI_BASE_URL", "http://h:8/v1//?a=1&b=/x/"}})).openai_base_url,
            "http://h:8/v1?a=1&b=/x/");
  EXPECT_EQ(
      load_config(env_of({{"EMBEDDING_BASE_URL", "http://h/e/?v=2"}, {"EMBEDDING_MODEL", "m"}}))
          .embedding_base_url,
      "http://h/e?v=2");
}

// #31: the key's own header, and extra headers as a JSON object; every mistake refused naming
// its variable, never echoing a value (a value may be a secret).
TEST(ConfigTest, TheKeysHeaderAndExtraHeadersAreReadAndCheckedWithoutEchoingValues) {
  const Config defaults = load_config(env_of({}));
  EXPECT_EQ(defaults.openai_api_key_header, "");
  EXPECT_TRUE(defaults.openai_extra_headers.empty());
  const Config c = load_config(env_of(
      {{"OPENAI_API_KEY", "k"},
       {"OPENAI_API_KEY_HEADER", " api-key "},
       {"OPENAI_EXTRA_HEADERS",
        R"({"HTTP-Referer": "https://example.com", "X-Title": "My bot", "Authorization": "x"})"}}));
  EXPECT_EQ(c.openai_api_key_header, "api-key");
  ASSERT_EQ(c.openai_extra_headers.size(), 3u);  // Authorization is free: the key is in api-key
  EXPECT_EQ(c.openai_extra_headers[0].first, "HTTP-Referer");
  EXPECT_EQ(c.openai_extra_headers[1].second, "My bot");
  EXPECT_TRUE(load_config(env_of({{"OPENAI_EXTRA_HEADERS", "  "}})).openai_extra_headers.empty());
  // Without a key, the key's header may come from the extra headers (a gateway's own scheme).
  EXPECT_EQ(load_config(env_of({{"OPENAI_EXTRA_HEADERS", R"({"Authorization": "Basic eA=="})"}}))
                .openai_extra_headers.size(),
            1u);
  for (const char* bad : {"api key", "api:key", "x\ny", "Host", "content-type"})
    expect_refused("OPENAI_API_KEY_HEADER", bad);
  for (const char* bad :
       {R"(["a"])", R"({"X-A": 1})", R"({"X-A": "a\r\nX-B: b"})", R"({"Bad Name": "v"})",
        R"({"content-type": "text/plain"})", R"({"Host": "evil"})", R"({"Expect": "x"})",
        R"({"X-A": "1", "x-a": "2"})", R"({"X-A": "1", "X-A": "2"})", "not json",
        R"({"X-A": "s3cret-value\u0000"})", R"({"X-A": "s3cret\u0007"})", R"({"X-A": ""})"}) {
    expect_refused("OPENAI_EXTRA_HEADERS", bad);
    try {
      load_config(env_of({{"OPENAI_EXTRA_HEADERS", bad}}));
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
    }
  }
  // A key typed where a name goes is not echoed, nor a URL's query; a tab in a value is taken.
  for (const auto& [variable, value] : std::vector<std::pair<std::string, std::string>>{
           {"OPENAI_API_KEY_HEADER", "api-key: sk-s3cret"},
           {"OPENAI_EXTRA_HEADERS", R"({"Authorization: Bearer sk-s3cret": "x"})"},
           {"OPENAI_BASE_URL", "https://gw.example/v1?subscription-key=s3cret#f"}}) {
    try {
      load_config(env_of({{variable, value}}));
      ADD_FAILURE() << variable << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(load_config(env_of({{"OPENAI_EXTRA_HEADERS", R"({"X-A": "a\tb"})"}}))
                .openai_extra_headers[0]
                .second,
            "a\tb");
  // With a key, its header cannot also be an extra header (which would win is unclear).
  try {
    load_config(env_of({{"OPENAI_API_KEY", "k"},
                        {"OPENAI_EXTRA_HEADERS", R"({"authorization": "Bearer other"})"}}));
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.variable(), "OPENAI_EXTRA_HEADERS");
    EXPECT_EQ(std::string(e.what()).find("other"), std::string::npos) << e.what();
  }
  // The embeddings' own, only with their own endpoint.
  const Config e = load_config(env_of({{"EMBEDDING_BASE_URL", "http://h/v1"},
                                       {"EMBEDDING_MODEL", "m"},
                                       {"EMBEDDING_API_KEY", "ek"},
                                       {"EMBEDDING_API_KEY_HEADER", "api-key"},
                                       {"EMBEDDING_EXTRA_HEADERS", R"({"X-Team": "t"})"}}));
  EXPECT_EQ(e.embedding_api_key_header, "api-key");
  ASSERT_EQ(e.embedding_extra_headers.size(), 1u);
  expect_refused("EMBEDDING_API_KEY_HEADER", "api-key");
  expect_refused("EMBEDDING_EXTRA_HEADERS", R"({"X-Team": "t"})");
}

}  // namespace
}  // namespace autonous::config

namespace autonous::config {
namespace {

TEST(ConfigTest, DatabaseUrlSelectsPostgresAndRefusesOtherSchemesAndDbPathBeside) {
  EXPECT_TRUE(load_config(env_of({})).database_url.empty());
  EXPECT_EQ(load_config(env_of({{"DATABASE_URL", " postgresql://u@h/db "}})).database_url,
            "postgresql://u@h/db");
  EXPECT_EQ(load_config(env_of({{"DATABASE_URL", "postgres://h/db"}})).database_url,
            "postgres://h/db");
  for (const char* bad : {"mysql://h/db", "h/db", "sqlite:///x.db"}) {
    try {
      load_config(env_of({{"DATABASE_URL", bad}}));
      ADD_FAILURE() << bad;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.variable(), "DATABASE_URL") << bad;
    }
  }
  try {
    load_config(env_of({{"DATABASE_URL", "postgresql://h/db"}, {"DB_PATH", "/tmp/x.db"}}));
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.variable(), "DATABASE_URL");
    EXPECT_NE(std::string(e.what()).find("DB_PATH"), std::string::npos);
  }
}

}  // namespace
}  // namespace autonous::config

namespace autonous::config {
namespace {

TEST(ConfigTest, FrontEndSettingsHaveTheirDefaultsAndAreChecked) {
  const Config d = load_config(env_of({}));
  EXPECT_EQ(d.reply_webhook_url, "");
  EXPECT_EQ(d.reply_webhook_max_attempts, 15);
  EXPECT_EQ(d.reply_webhook_timeout.count(), 10000);
  EXPECT_EQ(d.reply_webhook_retry_base.count(), 1000);
  EXPECT_FALSE(d.task_ended_notify.has_value());  // the database's setting (on) stands
  EXPECT_FALSE(d.stream_replies);
  EXPECT_EQ(d.stream_flush.count(), 250);
  const Config c = load_config(env_of({{"REPLY_WEBHOOK_URL", "https://bot.example.com/hook?t=1"},
                                       {"REPLY_WEBHOOK_SECRET", "s"},
                                       {"TASK_ENDED_NOTIFY", "off"},
                                       {"STREAM_REPLIES", "on"},
                                       {"STREAM_FLUSH_MS", "100"}}));
  EXPECT_EQ(c.reply_webhook_url, "https://bot.example.com/hook?t=1");
  EXPECT_EQ(c.task_ended_notify, std::optional<bool>(false));
  EXPECT_TRUE(c.stream_replies);
  EXPECT_EQ(c.stream_flush.count(), 100);
  for (const char* bad : {"ftp://h/x", "hook", "https://h/x#frag", "https://h /x"})
    expect_refused("REPLY_WEBHOOK_URL", bad);
  expect_refused("REPLY_WEBHOOK_SECRET", "without a url");
  expect_refused("REPLY_WEBHOOK_MAX_ATTEMPTS", "0");
  expect_refused("REPLY_WEBHOOK_TIMEOUT_MS", "99");
  expect_refused("STREAM_REPLIES", "yes");
  expect_refused("STREAM_FLUSH_MS", "5");
  expect_refused("TASK_ENDED_NOTIFY", "maybe");
}

TEST(ConfigTest, AWebhookUrlWithAPasswordIsRefusedWithoutShowingIt) {
  try {
    load_config(env_of({{"REPLY_WEBHOOK_URL", "https://user:hunter2@bot.example.com/hook"}}));
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.variable(), "REPLY_WEBHOOK_URL");
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("REPLY_WEBHOOK_SECRET"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace autonous::config

#ifdef AUTONOUS_SOURCE_DIR
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "internal/config/env_file.h"

namespace autonous::config {
namespace {

std::string source_file(const std::string& path) {
  std::ifstream in(std::string(AUTONOUS_SOURCE_DIR) + "/" + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// config/autonous.env.example documents every variable the configuration reads (set, or
// commented out when it has no value by default), and so does docs/configuration.md; the
// example as shipped loads, and what it sets is what the code does without it (#33).
TEST(ConfigTest, TheEnvExampleAndTheDocsNameEveryVariableAndChangeNoDefault) {
  const std::string code =
      source_file("internal/config/config.cpp") + source_file("internal/config/api_key.cpp");
  const std::string example = source_file("config/autonous.env.example");
  const std::string docs = source_file("docs/configuration.md");
  std::set<std::string> read;
  const std::regex name(R"((?:env, |ConfigError\()\"([A-Z][A-Z0-9_]+)\")");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), name); it != std::sregex_iterator();
       ++it)
    read.insert((*it)[1]);
  ASSERT_GT(read.size(), 60u);
  for (const std::string& v : read) {
    EXPECT_TRUE(std::regex_search(example, std::regex("(^|\\n)#?" + v + "=")))
        << v << " is read but not in config/autonous.env.example";
    EXPECT_NE(docs.find("`" + v + "`"), std::string::npos)
        << v << " is read but not in docs/configuration.md";
  }
  // Loaded as shipped (the required OPENAI_BASE_URL given), the example is the defaults.
  const std::string path = ::testing::TempDir() + "/autonous.env.example";
  std::ofstream(path) << example;
  const EnvLookup shipped = layered_env(env_of({}), read_env_file(path));
  const Config d = load_config(env_of({}));
  const Config c = load_config(shipped);
  EXPECT_EQ(c.history_window, d.history_window);
  EXPECT_EQ(c.max_chars_per_message, d.max_chars_per_message);
  EXPECT_EQ(c.max_context_tokens, d.max_context_tokens);
  EXPECT_EQ(c.keep_recent_messages, d.keep_recent_messages);
  EXPECT_EQ(c.worker_concurrency, d.worker_concurrency);
  EXPECT_EQ(c.task_lease, d.task_lease);
  EXPECT_EQ(c.task_max_attempts, d.task_max_attempts);
  EXPECT_EQ(c.retry_budget, d.retry_budget);
  EXPECT_EQ(c.context_strategy, d.context_strategy);
  EXPECT_EQ(c.recall, d.recall);
  EXPECT_EQ(c.tool_max_steps, d.tool_max_steps);
  EXPECT_EQ(c.tool_result_max_bytes, d.tool_result_max_bytes);
  EXPECT_EQ(c.reply_webhook_max_attempts, d.reply_webhook_max_attempts);
  EXPECT_EQ(c.reply_webhook_timeout, d.reply_webhook_timeout);
  EXPECT_EQ(c.task_ended_notify, d.task_ended_notify);
  EXPECT_EQ(c.stream_replies, d.stream_replies);
  EXPECT_EQ(c.stream_flush, d.stream_flush);
  EXPECT_EQ(c.sqlite_synchronous, d.sqlite_synchronous);
  EXPECT_EQ(c.openai_model, d.openai_model);
}

// The unit reads the example with systemd's EnvironmentFile= (no comment after a value, no
// `export`), the commands with --env-file: every line is in the subset both read alike.
TEST(ConfigTest, TheEnvExampleIsReadAlikeBySystemdAndByEnvFile) {
  std::ifstream in(std::string(AUTONOUS_SOURCE_DIR) + "/config/autonous.env.example");
  ASSERT_TRUE(in);
  const std::regex assignment(R"re([A-Z][A-Z0-9_]*=("[^"\\$`]*"|'[^']*'|[^\s"'#\\$`]*))re");
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(std::regex_match(line, assignment)) << line;
    ++n;
  }
  EXPECT_GT(n, 20);
}

}  // namespace
}  // namespace autonous::config
#endif
