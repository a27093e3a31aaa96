#include <ctime>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/backend/session.h"
#include "internal/config/config.h"
#include "internal/events/event_types.h"
#include "internal/ops/health.h"
#include "internal/ops/html.h"
#include "internal/ops/metrics.h"
#include "internal/ops/page_db.h"
#include "tests/support/pg_test_db.h"
#include "tests/support/test_db.h"

namespace autonous::ops {
namespace {

using nlohmann::json;

// The operator surface's connection, opened through the seam as the dashboard and the worker's
// surface open it (`need_write`: the worker's, whose probe asks whether it could write).
std::unique_ptr<PageDb> page_db(const testing::TestDb& t, bool need_write = true) {
  config::Config c;
  c.db_path = t.path();
  return backend::open_page_db(c, need_write);
}
std::unique_ptr<PageDb> page_db(const testing::PgTestDb& pg, bool need_write = true) {
  config::Config c;
  c.database_url = pg.url();
  return backend::open_page_db(c, need_write);
}

events::Event event(std::string_view type, const json& payload, int64_t at) {
  events::Event e;
  e.type = std::string(type);
  e.payload = payload.dump();
  e.at_unix_ms = at;
  return e;
}

TEST(HealthTest, ASilentSlotIsWedged) {
  const LoopProbe fine = [] { return LoopStatus{2, 1, {10, -1}, false, {}}; };
  EXPECT_TRUE(check_health("", fine, {}).ok);
  const LoopProbe wedged = [] { return LoopStatus{2, 1, {10, 61000}, false, {}}; };
  const HealthReport h = check_health("", wedged, {});
  EXPECT_FALSE(h.ok);
  EXPECT_EQ(h.reason, "slot 1 silent for 61 s (limit 60 s)");
  EXPECT_EQ(json::parse(h.body)["status"], "unhealthy");
  const HealthReport db = check_health("database refuses writes: locked", fine, {});
  EXPECT_FALSE(db.ok);
  EXPECT_EQ(json::parse(db.body)["reason"], "database refuses writes: locked");
}

TEST(HealthTest, ASlotReconnectingPastTheLimitIsUnhealthyWhileItStillBeats) {
  LoopStatus s{2, 0, {10, 10}, false, {}};
  s.offline_ms = {0, 9000};
  EXPECT_TRUE(check_health("", [s] { return s; }, {}).ok);  // a restart's few seconds
  s.offline_ms = {0, 12000};
  const HealthReport h = check_health("", [s] { return s; }, {});
  EXPECT_FALSE(h.ok);
  EXPECT_EQ(h.reason, "slot 1 has been connecting to the database for 12 s");
}

TEST(HealthTest, AStartingWorkerIsHealthy) {
  const LoopProbe starting = [] { return LoopStatus{0, 0, {}, true, {}}; };
  const HealthReport h = check_health("", starting, {});
  EXPECT_TRUE(h.ok);
  EXPECT_EQ(json::parse(h.body)["status"], "starting");
}

TEST(HealthTest, ADatabaseThatRefusesWritesIsUnhealthyForAWorkerOnly) {
  testing::TestDb t;
  auto other = t.open_connection();
  auto probe = page_db(t);
  other->exec("BEGIN IMMEDIATE");
  const std::string worker = probe->probe(true);
  EXPECT_NE(worker.find("database refuses writes"), std::string::npos) << worker;
  EXPECT_EQ(probe->probe(false), "");  // the dashboard (or a starting worker) reads
  other->exec("ROLLBACK");
  EXPECT_EQ(probe->probe(true), "");  // and the probe left no transaction open
  EXPECT_EQ(probe->probe(true), "");
}

// On PostgreSQL: a lock that stops writers (CREATE INDEX's SHARE, say) and a server whose
// transactions are read-only refuse a worker; readers still read.
TEST(HealthTest, OnPostgresALockedTasksTableOrAReadOnlyServerRefusesWrites) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb pg;
  auto probe = page_db(pg);
  EXPECT_EQ(probe->probe(true), "");
  auto other = pg.open_connection();
  other->exec("BEGIN; LOCK TABLE tasks IN SHARE MODE");
  const auto started = std::chrono::steady_clock::now();
  const std::string worker = probe->probe(true);
  EXPECT_NE(worker.find("database refuses writes"), std::string::npos) << worker;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  EXPECT_EQ(probe->probe(false), "");
  other->exec("ROLLBACK");
  EXPECT_EQ(probe->probe(true), "");  // the probe left no transaction or lock behind
  const std::string alter =
      "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I %s', current_database(), '{}'); END $$";
  pg.db().exec(fmt::format(fmt::runtime(alter), "SET default_transaction_read_only = on"));
  auto read_only = page_db(pg);
  pg.db().exec(fmt::format(fmt::runtime(alter), "RESET default_transaction_read_only"));
  EXPECT_EQ(read_only->probe(true),
            "database refuses writes: the server's transactions are read-only");
  EXPECT_EQ(read_only->probe(false), "");
}

// A server restart or failover ends the surface's sessions: the next request connects again.
TEST(PageDbTest, OnPostgresAnEndedSessionIsReplacedAtTheNextCall) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb pg;
  auto db = page_db(pg);
  const auto terminate = [&] {
    pg.db().query(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
        "current_database() AND pid <> pg_backend_pid()");
  };
  terminate();
  EXPECT_EQ(db->probe(true), "");
  terminate();
  EXPECT_EQ(db->query("SELECT count(*) FROM tasks").int64(0, 0), 0);
  terminate();
  db->begin_request(std::chrono::steady_clock::now() + std::chrono::seconds(10));
  EXPECT_GT(db->now(), 1.7e9);
  db->end_request();
}

TEST(PageDbTest, StoredTimesRoundTripAndBadTextIsNone) {
  EXPECT_DOUBLE_EQ(*unix_seconds("1970-01-01T00:00:01.500Z"), 1.5);
  EXPECT_DOUBLE_EQ(*unix_seconds("2026-11-23T09:08:26Z"), 1795424906.0);
  EXPECT_EQ(iso_time(1795424906.25), "2026-11-23T09:08:26.250Z");
  EXPECT_DOUBLE_EQ(*unix_seconds(iso_time(1795424906.25)), 1795424906.25);
  for (const char* bad : {"", "yesterday", "2026-11-23", "2026-11-23 09:08:26", "2026-1-2T3:4:5"})
    EXPECT_FALSE(unix_seconds(bad)) << bad;
}

// The same statement on both backends gives the same text, numbers and NULLs.
TEST(PageDbTest, BothBackendsAnswerTheSharedSqlAlike) {
  PG_TEST_OR_SKIP();
  testing::TestDb t;
  testing::PgTestDb pg;
  auto lite = page_db(t);
  auto post = page_db(pg);
  t.db().exec(
      "INSERT INTO events(type, chat_id, payload) VALUES ('llm.response', 'c', "
      "'{\"model\":\"m\",\"latency_ms\":12.5,\"usage\":{\"prompt_tokens\":9007199254740993}}')");
  pg.db().exec(
      "INSERT INTO events(type, chat_id, payload) VALUES ('llm.response', 'c', "
      "'{\"model\":\"m\",\"latency_ms\":12.5,\"usage\":{\"prompt_tokens\":9007199254740993}}')");
  const std::string sql =
      "SELECT payload ->> 'model', payload ->> 'latency_ms', payload -> 'usage' ->> "
      "'prompt_tokens', payload ->> 'missing', count(*) FILTER (WHERE type = $1) AS n FROM "
      "events WHERE chat_id = $2 GROUP BY 1, 2, 3, 4";
  const Rows a = lite->query(sql, {std::string("llm.response"), std::string("c")});
  const Rows b = post->query(sql, {std::string("llm.response"), std::string("c")});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  for (int c = 0; c < 5; ++c) EXPECT_EQ(a.text(0, c), b.text(0, c)) << c;
  EXPECT_DOUBLE_EQ(b.real(0, 1), 12.5);
  EXPECT_EQ(b.int64(0, 2), 9007199254740993);  // exact, past a double's 2^53
  EXPECT_TRUE(a.is_null(0, 3));
  EXPECT_TRUE(b.is_null(0, 3));
  EXPECT_EQ(b.int64(0, b.column("n")), 1);
  EXPECT_EQ(b.column("nope"), -1);
  // A deadline already passed stops the next statement.
  post->begin_request(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  EXPECT_THROW(post->query("SELECT 1"), DeadlinePassed);
  post->end_request();
  EXPECT_EQ(post->query("SELECT 1").text(0, 0), "1");
  lite->begin_request(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  EXPECT_THROW(lite->query("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                           "WHERE i < 10000000) SELECT count(*) FROM n"),
               DeadlinePassed);
  lite->end_request();
}

TEST(MetricsTest, ATrailBecomesCountersAndHistograms) {
  testing::TestDb t;
  TaskCounts counts;
  Metrics m("default-model");
  m.record(
      {event(events::kTurnStarted, json::object(), 1000),
       event(events::kContextCompressed,
             {{"level", "normal"},
              {"strategy", "summarize"},
              {"recall",
               {{"items", json::array({{{"score", 0.5}}, {{"score", 0.4}}, json::object()})}}}},
             1001),
       event(events::kContextSummarized,
             {{"model", "sum"},
              {"calls", 2},
              {"latency_ms", 400},
              {"usage", json::array({{{"prompt_tokens", 10}}, {{"prompt_tokens", 5}}})}},
             1002),
       event(events::kLlmRequest, {{"model", "m1"}}, 1003),
       event(events::kLlmResponse,
             {{"status", 200},
              {"latency_ms", 1500},
              {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 7}, {"cached_tokens", 64}}}},
             2500),
       event(events::kContextWarning, {{"reason", "pins_left_out"}}, 2500),
       event(events::kTurnCompleted, {{"time_to_reply_ms", 4000}}, 3000)});
  m.record({event(events::kTurnStarted, json::object(), 1000),
            event(events::kLlmRetry, {{"status", 429}, {"latency_ms", 3}, {"reason", "http_429"}},
                  1100)});
  m.record({event(events::kTurnStarted, json::object(), 1000),
            event(events::kTurnFailed, {{"status", 400}, {"reason", "http_400"}}, 1100)});
  m.record({event("bogus", {}, 0)});  // ignored
  const auto db = page_db(t);
  const std::string text = m.render(*db, counts, {});
  for (const char* line :
       {// The cached part of a prompt is counted once: the kinds add up to every token (107).
        "autonous_llm_tokens_total{kind=\"prompt_uncached\",model=\"m1\"} 36",
        "autonous_llm_tokens_total{kind=\"prompt_cached\",model=\"m1\"} 64",
        "autonous_llm_tokens_total{kind=\"completion\",model=\"m1\"} 7",
        "autonous_task_time_to_reply_seconds_count 1",
        "autonous_task_time_to_reply_seconds_sum 4",
        "autonous_task_time_to_reply_seconds_bucket{le=\"3\"} 0",
        "autonous_task_time_to_reply_seconds_bucket{le=\"5\"} 1",
        "autonous_tasks_failed_total{reason=\"http_400\"} 1",
        "autonous_context_warnings_total{reason=\"pins_left_out\"} 1",
        "autonous_context_warnings_total{reason=\"server_truncated\"} 0",
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "process_open_fds ",
        "process_max_fds ",
        "process_start_time_seconds ",
        "process_virtual_memory_bytes ",
        "autonous_llm_request_duration_seconds_count{model=\"m1\",outcome=\"ok\"} 1",
        "autonous_llm_request_duration_seconds_sum{model=\"m1\",outcome=\"ok\"} 1.5",
        "autonous_llm_request_duration_seconds_count{model=\"default-model\",outcome=\"error\"} 1",
        "autonous_llm_retries_total{reason=\"http_429\"} 1",
        "autonous_context_compressions_total{level=\"normal\",strategy=\"summarize\"} 1",
        "autonous_context_summaries_total{outcome=\"ok\"} 1",
        "autonous_recall_hits_total 2",
        "autonous_task_duration_seconds_sum{model=\"m1\",outcome=\"done\"} 2",
        "autonous_task_duration_seconds_count{model=\"default-model\",outcome=\"retry\"} 1",
        "autonous_llm_tokens_total{kind=\"prompt_uncached\",model=\"sum\"} 15",
        "autonous_llm_request_duration_seconds_count{model=\"sum\",outcome=\"ok\"} 2",
        "autonous_llm_request_duration_seconds_sum{model=\"sum\",outcome=\"ok\"} 0.4",
        "autonous_tasks{status=\"queued\"} 0",
        "autonous_oldest_queued_age_seconds 0"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  EXPECT_EQ(text.find("autonous_slots"), std::string::npos);   // no worker: no slot gauges
  EXPECT_EQ(text.find("kind=\"prompt\""), std::string::npos);  // the kind that overlapped cached
}

TEST(MetricsTest, TheProcessFiguresAreThisProcesss) {
  testing::TestDb t;
  TaskCounts counts;
  const Metrics m("x");
  const auto db = page_db(t);
  const std::string text = m.render(*db, counts, {});
  auto value = [&](const std::string& name) {
    const size_t at = text.find("\n" + name + " ");
    EXPECT_NE(at, std::string::npos) << name << "\n" << text;
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + name.size() + 2));
  };
  EXPECT_GT(value("process_resident_memory_bytes"), 1e6);
  EXPECT_GE(value("process_virtual_memory_bytes"), value("process_resident_memory_bytes"));
  EXPECT_GE(value("process_open_fds"), 3);  // stdin, stdout, stderr at least
  EXPECT_GE(value("process_max_fds"), value("process_open_fds"));
  EXPECT_GE(value("process_cpu_seconds_total"), 0);
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_LE(value("process_start_time_seconds"), now + 1);
  EXPECT_GT(value("process_start_time_seconds"), now - 3600);  // this test binary's start
  EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter"), std::string::npos);
}

// #31: each llm.response's cost_usd adds to its model's counter: a chat call under the model
// requested, a summary's and an embeddings call under their own; a summary's tokens are
// context.summarized's (not counted twice), an embeddings call's are counted.
TEST(MetricsTest, CostsAddUpPerModelAndSideCallsAreNotTurnRequests) {
  testing::TestDb t;
  TaskCounts counts;
  Metrics m("default-model");
  m.record(
      {event(events::kTurnStarted, json::object(), 1000),
       event(events::kLlmResponse,
             {{"call", "embeddings"},
              {"model", "emb"},
              {"latency_ms", 20},
              {"usage", {{"prompt_tokens", 50}}},
              {"cost_usd", 0.000001}},
             1000),
       event(events::kContextSummarized,
             {{"model", "sum"}, {"calls", 1}, {"usage", json::array({{{"prompt_tokens", 10}}})}},
             1001),
       event(events::kLlmResponse,
             {{"call", "summary"},
              {"model", "sum"},
              {"usage", {{"prompt_tokens", 10}}},
              {"cost_usd", 0.5}},
             1001),
       event(events::kLlmRequest, {{"model", "m1"}}, 1002),
       event(events::kLlmResponse,
             {{"call", "chat"},
              {"model", "m1-2026-01-01"},
              {"status", 200},
              {"latency_ms", 100},
              {"usage", {{"prompt_tokens", 100}}},
              {"cost_usd", 0.25}},
             1100),
       event(events::kLlmResponse, {{"status", 200}, {"latency_ms", 5}, {"cost_usd", nullptr}},
             1200),
       event(events::kTurnCompleted, json::object(), 1300)});
  m.record(
      {event(events::kTurnStarted, json::object(), 1000),
       event(events::kLlmRequest, {{"model", "m1"}}, 1002),
       event(events::kLlmResponse, {{"status", 200}, {"latency_ms", 5}, {"cost_usd", 0.5}}, 1100)});
  const auto db = page_db(t);
  const std::string text = m.render(*db, counts, {});
  for (const char* line :
       {"autonous_llm_cost_usd_total{model=\"m1\"} 0.75",
        "autonous_llm_cost_usd_total{model=\"sum\"} 0.5",
        "autonous_llm_cost_usd_total{model=\"emb\"} 1e-06",
        "autonous_llm_tokens_total{kind=\"prompt_uncached\",model=\"sum\"} 10",
        "autonous_llm_tokens_total{kind=\"prompt_uncached\",model=\"emb\"} 50",
        "autonous_llm_request_duration_seconds_count{model=\"m1\",outcome=\"ok\"} 3"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  EXPECT_EQ(text.find("model=\"emb\",outcome"), std::string::npos);  // not a turn's request
  EXPECT_EQ(text.find("model=\"m1-2026-01-01\""), std::string::npos);
}

TEST(MetricsTest, BuildInfoNamesTheVersionAndCancelledTasksAndTheOutboxAreCounted) {
  testing::TestDb t;
  TaskCounts counts;
  Metrics m("x");
  m.set_version("1.2.3 (git abc123)");
  t.db().exec("INSERT INTO tasks(chat_id, text) VALUES ('a', 'x')");
  t.db().exec("UPDATE tasks SET status = 'cancelled'");
  const auto db = page_db(t);
  const std::string text = m.render(*db, counts, {});
  for (const char* line :
       {"autonous_build_info{version=\"1.2.3 (git abc123)\"} 1",
        "autonous_tasks{status=\"cancelled\"} 1", "autonous_reply_outbox{state=\"pending\"} 0",
        "autonous_reply_outbox{state=\"undeliverable\"} 0"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

TEST(MetricsTest, LabelValuesFromDataAreBounded) {
  testing::TestDb t;
  TaskCounts counts;
  Metrics m("x");
  for (int i = 0; i < 100; ++i)
    m.record({event(events::kLlmRetry, {{"reason", "r" + std::to_string(i)}}, 0)});
  const auto db = page_db(t);
  const std::string text = m.render(*db, counts, {});
  EXPECT_NE(text.find("autonous_llm_retries_total{reason=\"other\"} 68"), std::string::npos);
  EXPECT_EQ(text.find("reason=\"r99\""), std::string::npos);
}

TEST(HtmlTest, EscapeLeavesNoMarkup) {
  EXPECT_EQ(html::escape("<script>a&b\"c'</script>"),
            "&lt;script&gt;a&amp;b&quot;c&#39;&lt;/script&gt;");
  EXPECT_EQ(html::escape("\xff"), "\xEF\xBF\xBD");  // invalid UTF-8 repaired
  EXPECT_EQ(html::link("/chat", "id", "a b/<", "<x>"),
            "<a href='/chat?id=a%20b%2F%3C'>&lt;x&gt;</a>");
  html::Chart c{
      "c<", "t<script>", "x", "y", {{"s'", "red", {{1, 2}, {2, 3}}}}, {{1, 2, "blue", "<b>", 'o'}},
      0};
  const std::string svg = html::line_chart(c);
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_EQ(html::line_chart(html::Chart{}), "<p class='muted'>No data yet.</p>");
}

}  // namespace
}  // namespace autonous::ops
