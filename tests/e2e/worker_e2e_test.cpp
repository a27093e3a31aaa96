// `autonous worker` end to end: the real binary, the real stub over loopback HTTP, a real
// SQLite file. Happy path, ordering, every fault kind, kill -9, SIGTERM, two processes, secrets.

#include <csignal>
#include <filesystem>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/worker_e2e_fixture.h"

namespace autonous::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_F(WorkerE2eTest, HappyPathStoresRepliesPairsAndOrderedEvents) {
  StubServer stub(dir_.path().string(), 5);
  enqueue("alice", "Hi, my name is Alice.");
  enqueue("bob", "What's the weather?");
  enqueue("alice", "What is my name?");
  drain(stub);
  expect_exactly_once(3);
  EXPECT_EQ(str("SELECT reply FROM tasks WHERE id = 1"),
            "reply to: Hi, my name is Alice. (saw 2 messages)");
  // The second alice task saw the first exchange.
  EXPECT_EQ(str("SELECT reply FROM tasks WHERE id = 3"),
            "reply to: What is my name? (saw 4 messages)");

  // Per task: the event sequence in DESIGN.md, turn events parented on agent.started.
  for (int task = 1; task <= 3; ++task) {
    SCOPED_TRACE(task);
    const auto trail = events({"--task", std::to_string(task)});
    std::string types;
    for (const auto& e : trail) types += (types.empty() ? "" : " ") + e["type"].get<std::string>();
    EXPECT_EQ(
        types,
        "agent.started turn.started context.compressed llm.request llm.response turn.completed");
    ASSERT_FALSE(trail.empty());
    for (size_t i = 1; i < trail.size(); ++i) EXPECT_EQ(trail[i]["parent_id"], trail[0]["id"]);
  }
  const auto compressed =
      json::parse(str("SELECT payload FROM events WHERE type = "
                      "'context.compressed' AND task_id = 3"));
  for (const char* key : {"original_count", "compressed_count", "estimated_tokens", "budget_tokens",
                          "dropped_count", "truncated_count"})
    EXPECT_TRUE(compressed.contains(key)) << key;
  EXPECT_EQ(compressed["original_count"], 2);
  const auto response =
      json::parse(str("SELECT payload FROM events WHERE type = 'llm.response' "
                      "AND task_id = 3"));
  EXPECT_GT(response["usage"]["prompt_tokens"].get<int>(), 0);
  EXPECT_TRUE(response["usage"].contains("cached_tokens"));
  EXPECT_GE(response["latency_ms"].get<int>(), 5);

  // The shell path operators use: sqlite3, or psql with the ->> form docs/postgresql.md shows.
  const auto shell =
      pg_ ? run({"/usr/bin/psql", "-tA", pg_->url(), "-c",
                 "SELECT (payload -> 'usage' ->> 'prompt_tokens')::int > 0 FROM events "
                 "WHERE type = 'llm.response' AND task_id = 3"},
                {}, dir_.path().string())
          : run({"/usr/bin/sqlite3", db_,
                 "SELECT json_extract(payload, '$.usage.prompt_tokens') > 0 FROM events "
                 "WHERE type = 'llm.response' AND task_id = 3;"},
                {}, dir_.path().string());
  EXPECT_EQ(shell.exit_code, 0) << shell.err;
  EXPECT_EQ(shell.out, pg_ ? "t\n" : "1\n");
  EXPECT_EQ(num("SELECT count(*) FROM llm_calls"), 3);  // the helper view
}

TEST_F(WorkerE2eTest, PerChatOrderingHoldsUnderConcurrency) {
  StubServer stub(dir_.path().string(), 15);
  enqueue_sql(/*chats=*/4, /*per_chat=*/6);
  drain(stub, {{"WORKER_CONCURRENCY", "8"}});
  expect_exactly_once(24);
  // Within a chat, task k (0-based) saw k earlier exchanges: 2k + 2 messages.
  for (int c = 0; c < 4; ++c) {
    for (int k = 0; k < 6; ++k) {
      EXPECT_EQ(
          str("SELECT reply FROM tasks WHERE chat_id = 'chat" + std::to_string(c) +
              "' AND text = 'm" + std::to_string(k) + "'"),
          "reply to: m" + std::to_string(k) + " (saw " + std::to_string(2 * k + 2) + " messages)");
    }
  }
  // History of each chat alternates user/assistant in task order.
  EXPECT_EQ(num("SELECT count(*) FROM history h1 JOIN history h2 ON h1.chat_id = h2.chat_id "
                "AND h1.id < h2.id WHERE h1.task_id > h2.task_id"),
            0);
  // Different chats really ran in parallel: more than one call in flight at once.
  std::vector<int64_t> times;
  for (const auto& line : stub.log_lines()) times.push_back(json::parse(line)["t_ms"]);
  int max_overlap = 0;
  for (size_t i = 0; i < times.size(); ++i) {
    int overlap = 0;
    for (size_t j = 0; j < times.size(); ++j)
      overlap += std::llabs(times[i] - times[j]) < 10 ? 1 : 0;
    max_overlap = std::max(max_overlap, overlap);
  }
  EXPECT_GT(max_overlap, 1);
}

TEST_F(WorkerE2eTest, EveryFaultKindIsRetriedOrFailedAsSpecified) {
  StubServer stub(dir_.path().string());
  struct Case {
    std::string text;
    std::string status;
    int attempts;
    int min_attempts = 0;  // when set, attempts may be anywhere in [min_attempts, attempts]
  };
  const std::vector<Case> cases = {
      {"[[stub:500*2]]", "done", 3},       {"[[stub:502*1]]", "done", 2},
      {"[[stub:503*1]]", "done", 2},       {"[[stub:html502*1]]", "done", 2},
      {"[[stub:empty500*1]]", "done", 2},  {"[[stub:malformed*1]]", "done", 2},
      {"[[stub:truncated*1]]", "done", 2}, {"[[stub:drop*1]]", "done", 2, 1},
      {"[[stub:hang*1]]", "done", 2},      {"[[stub:429ms:100*1]]", "done", 2},
      {"[[stub:408*1]]", "done", 2},       {"[[stub:null*1]]", "done", 2},
      {"[[stub:length]]", "done", 1},      {"[[stub:nousage]]", "done", 1},
      {"[[stub:chunked]]", "done", 1},     {"[[stub:401]]", "failed", 1},
      {"[[stub:403]]", "failed", 1},       {"[[stub:404]]", "failed", 1},
      {"[[stub:400]]", "failed", 1},       {"[[stub:llama400]]", "failed", 1},
      {"[[stub:500]]", "failed", 3},       {"[[stub:null]]", "failed", 3},
  };
  for (size_t i = 0; i < cases.size(); ++i) enqueue("fault" + std::to_string(i), cases[i].text);
  drain(stub,
        {{"WORKER_CONCURRENCY", "8"}, {"LLM_TIMEOUT_SECONDS", "3"}, {"TASK_MAX_ATTEMPTS", "3"}});
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].text);
    const std::string id = std::to_string(i + 1);
    EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + id), cases[i].status);
    const int64_t attempts = num("SELECT attempts FROM tasks WHERE id = " + id);
    if (cases[i].min_attempts > 0) {
      // A connection dropped before any response: on a reused keep-alive connection libcurl
      // retries once by itself (attempt 1 succeeds); on a fresh one the queue retries.
      EXPECT_GE(attempts, cases[i].min_attempts);
      EXPECT_LE(attempts, cases[i].attempts);
    } else {
      EXPECT_EQ(attempts, cases[i].attempts);
    }
    if (cases[i].status == "failed") {
      EXPECT_FALSE(str("SELECT error FROM tasks WHERE id = " + id).empty());
      EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'turn.failed' AND task_id = " + id),
                1);
      EXPECT_EQ(num("SELECT count(*) FROM history WHERE task_id = " + id), 0);
    } else {
      EXPECT_EQ(num("SELECT count(*) FROM history WHERE task_id = " + id), 2);
    }
    EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'llm.retry' AND task_id = " + id),
              attempts - 1);
  }
  EXPECT_EQ(field("llm.response", 13, "finish_reason"), "length");
  // Content null is not an answer: retried with its reason, never stored as an empty reply.
  EXPECT_EQ(field("llm.retry", 12, "reason"), "empty_reply");
  EXPECT_NE(str("SELECT reply FROM tasks WHERE id = 12"), "");
  EXPECT_NE(str("SELECT error FROM tasks WHERE id = 22").find("no text"), std::string::npos);
  EXPECT_EQ(field("llm.retry", 9, "reason"), "timeout");
  EXPECT_NE(str("SELECT error FROM tasks WHERE id = 20").find("llama says no"), std::string::npos);
  (void)events();  // every payload reads back as a JSON object
}

TEST_F(WorkerE2eTest, RetryAfterIsHonouredInSecondsAndAsADate) {
  StubServer stub(dir_.path().string());
  enqueue("a", "[[stub:429:2*1]]");
  enqueue("b", "[[stub:429date:2*1]]");
  drain(stub);
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done' AND attempts = 2"), 2);
  // The stub saw each message twice; the second request came at least the asked delay later
  // (an HTTP date has one-second resolution, so allow for the rounding).
  std::map<std::string, std::vector<int64_t>> seen;
  for (const auto& line : stub.log_lines()) {
    const auto j = json::parse(line);
    seen[j["body"]["messages"].back()["content"]].push_back(j["t_ms"]);
  }
  ASSERT_EQ(seen["[[stub:429:2*1]]"].size(), 2u);
  EXPECT_GE(seen["[[stub:429:2*1]]"][1] - seen["[[stub:429:2*1]]"][0], 2000);
  ASSERT_EQ(seen["[[stub:429date:2*1]]"].size(), 2u);
  EXPECT_GE(seen["[[stub:429date:2*1]]"][1] - seen["[[stub:429date:2*1]]"][0], 1000);
  EXPECT_EQ(field("llm.retry", 1, "delay_ms"), "2000");
}

TEST_F(WorkerE2eTest, KillNineMidRunThenRestartLosesNothingAndAnswersNothingTwice) {
  StubServer stub(dir_.path().string(), 150);
  enqueue_sql(/*chats=*/6, /*per_chat=*/5);
  const Env e = env(
      stub,
      {{"WORKER_CONCURRENCY", "4"}, {"TASK_LEASE_SECONDS", "1"}, {"SQLITE_SYNCHRONOUS", "FULL"}});
  {
    Process worker({autonous_bin(), "worker"}, e, dir_.path().string());
    // Let some tasks finish and others be in flight, then kill without warning.
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    while (num("SELECT count(*) FROM tasks WHERE status = 'done'") < 5 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(20));
    worker.signal(SIGKILL);
    const auto killed = worker.wait(seconds(10));
    ASSERT_TRUE(killed);
    EXPECT_EQ(killed->signal, SIGKILL);
  }
  const int64_t done_before = num("SELECT count(*) FROM tasks WHERE status = 'done'");
  EXPECT_LT(done_before, 30);
  EXPECT_GT(num("SELECT count(*) FROM tasks WHERE status = 'running'"), 0);  // orphaned leases
  drain(e);
  expect_exactly_once(30);
  EXPECT_GT(count_flagged("agent.started", "reclaimed"), 0);
}

TEST_F(WorkerE2eTest, WorkersKilledAndOneFrozenLoseNothingAnswerNothingTwiceAndKeepOrder) {
  // Three worker processes; one is killed -9, a replacement starts, on PostgreSQL one is frozen
  // (SIGSTOP) holding leases that the others take over and comes back (its completions must be
  // refused: fenced on the lease token), another is killed -9, and a last one drains.
  StubServer stub(dir_.path().string(), 100);
  const int chats = 8;
  const int per_chat = 6;
  enqueue_sql(chats, per_chat);
  const Env e = env(stub, {{"WORKER_CONCURRENCY", "3"}, {"TASK_LEASE_SECONDS", "2"}});
  const auto wait_done = [&](int64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(30);
    while (num("SELECT count(*) FROM tasks WHERE status = 'done'") < n &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(20));
  };
  const std::string cwd = dir_.path().string();
  auto a = std::make_unique<Process>(std::vector<std::string>{autonous_bin(), "worker"}, e, cwd);
  auto b = std::make_unique<Process>(std::vector<std::string>{autonous_bin(), "worker"}, e, cwd);
  auto c = std::make_unique<Process>(std::vector<std::string>{autonous_bin(), "worker"}, e, cwd);
  wait_done(8);
  a->signal(SIGKILL);
  ASSERT_TRUE(a->wait(seconds(10)));
  // Frozen: on PostgreSQL only. A SQLite worker frozen inside its write transaction holds the
  // file's lock and stalls every writer until it wakes (no server can end its session); the
  // frozen case is PostgreSQL's, where the server ends a session idle in a transaction.
  Process d({autonous_bin(), "worker"}, e, cwd);
  int64_t frozen_at = num("SELECT count(*) FROM tasks WHERE status = 'done'");
  if (pg_) {
    // Freeze b while it holds a lease (its worker id ends in its pid).
    const std::string b_leases =
        "SELECT count(*) FROM tasks WHERE status = 'running' AND "
        "lease_owner LIKE '%:" +
        std::to_string(b->pid()) + "'";
    bool frozen = false;
    for (int i = 0; i < 200 && !frozen; ++i) {
      if (num(b_leases) == 0) {
        std::this_thread::sleep_for(milliseconds(10));
        continue;
      }
      b->signal(SIGSTOP);
      std::this_thread::sleep_for(milliseconds(50));
      frozen = num(b_leases) > 0;
      if (!frozen) b->signal(SIGCONT);
    }
    ASSERT_TRUE(frozen) << "worker b never held a lease";
    frozen_at = num("SELECT count(*) FROM tasks WHERE status = 'done'");
    // The others go on and take the frozen worker's tasks over once its 2 s leases expire (a
    // reclaim of a task b had claimed; worker a's leases, killed earlier, do not count).
    const std::string b_id = ":" + std::to_string(b->pid());
    const auto taken_from_b = [&] {  // tasks b had claimed that another claim reclaimed later
      std::set<int64_t> b_claimed;
      int64_t n = 0;
      for (const auto& ev : events({"--type", "agent.started"})) {
        const auto& p = ev["payload"];
        const int64_t task = ev["task_id"].get<int64_t>();
        if (b_claimed.count(task) > 0 && p.value("reclaimed", false)) ++n;
        if (p.value("worker_id", "").ends_with(b_id)) b_claimed.insert(task);
      }
      return n;
    };
    const auto deadline = std::chrono::steady_clock::now() + seconds(30);
    while (taken_from_b() == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(50));
    ASSERT_GT(taken_from_b(), 0);
    wait_done(frozen_at + 6);
    b->signal(SIGCONT);
  }
  wait_done(frozen_at + 18);
  c->signal(SIGKILL);
  ASSERT_TRUE(c->wait(seconds(10)));
  drain(e);
  b->signal(SIGTERM);
  d.signal(SIGTERM);
  ASSERT_TRUE(b->wait(seconds(20)));
  ASSERT_TRUE(d.wait(seconds(20)));
  // The frozen worker woke to find its leases taken over: it committed nothing for them.
  if (pg_) {
    // The frozen worker woke to find its leases taken over and committed nothing for them: its
    // renewal or completion was refused ("lease lost"), or, frozen inside a transaction for
    // more than 10 s, the server had ended its session and it stopped (no reconnection yet).
    const std::string err = b->stderr_text();
    EXPECT_TRUE(err.find("lease lost") != std::string::npos ||
                err.find("idle-in-transaction timeout") != std::string::npos)
        << err;
  }

  expect_exactly_once(chats * per_chat);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'turn.completed'"), chats * per_chat);
  // Per chat, in queue order: task k saw exactly the k exchanges before it, and the history's
  // rows are in task order.
  for (int ch = 0; ch < chats; ++ch)
    for (int k = 0; k < per_chat; ++k)
      EXPECT_EQ(
          str("SELECT reply FROM tasks WHERE chat_id = 'chat" + std::to_string(ch) +
              "' AND text = 'm" + std::to_string(k) + "'"),
          "reply to: m" + std::to_string(k) + " (saw " + std::to_string(2 * k + 2) + " messages)");
  EXPECT_EQ(num("SELECT count(*) FROM history h1 JOIN history h2 ON h1.chat_id = h2.chat_id "
                "AND h1.id < h2.id WHERE h1.task_id > h2.task_id"),
            0);
}

TEST_F(WorkerE2eTest, SigtermLetsInFlightCallsFinishThenExitsZero) {
  StubServer stub(dir_.path().string(), 1500);
  for (int i = 0; i < 3; ++i) enqueue("c" + std::to_string(i), "slow");
  Process worker({autonous_bin(), "worker"}, env(stub, {{"WORKER_CONCURRENCY", "4"}}),
                 dir_.path().string());
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (num("SELECT count(*) FROM tasks WHERE status = 'running'") < 3 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  worker.signal(SIGTERM);
  const auto r = worker.wait(seconds(20));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0) << r->err;
  expect_exactly_once(3);
}

TEST_F(WorkerE2eTest, ASecondSigtermCutsTheGracePeriodShort) {
  StubServer stub(dir_.path().string());
  enqueue("a", "[[stub:hang*1]]");
  // A grace period of an hour: only the second signal can end the run soon.
  Process worker({autonous_bin(), "worker"}, env(stub, {{"SHUTDOWN_GRACE_SECONDS", "3600"}}),
                 dir_.path().string());
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (stub.log_lines().empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  worker.signal(SIGTERM);
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_FALSE(worker.wait(milliseconds(10)));  // still in its grace period
  worker.signal(SIGTERM);
  const auto r = worker.wait(seconds(10));
  ASSERT_TRUE(r) << "the second SIGTERM did not end the grace period";
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_EQ(str("SELECT status FROM tasks"), "queued");  // released for another worker
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'agent.released'"), 1);
}

TEST_F(WorkerE2eTest, SigtermAfterTheGracePeriodReleasesLeasesForOthers) {
  StubServer stub(dir_.path().string());
  enqueue("a", "[[stub:hang*1]]");
  Process worker({autonous_bin(), "worker"}, env(stub, {{"SHUTDOWN_GRACE_SECONDS", "0"}}),
                 dir_.path().string());
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (stub.log_lines().empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  worker.signal(SIGTERM);
  const auto r = worker.wait(seconds(10));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_EQ(str("SELECT status FROM tasks"), "queued");
  EXPECT_EQ(num("SELECT attempts FROM tasks"), 0);  // a release is not an attempt
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'agent.released'"), 1);
  // Another worker takes it at once (no lease to wait out) and finishes it.
  drain(stub);
  expect_exactly_once(1);
}

TEST_F(WorkerE2eTest, FourProcessesShareOneFileFairlyWithoutDoubleWork) {
  StubServer stub(dir_.path().string(), 10);
  // All four run before any task exists, so a process that starts late (slow under ASan)
  // does not look starved: fairness is measured only while all of them compete.
  std::vector<std::unique_ptr<Process>> workers;
  for (int p = 0; p < 4; ++p)
    workers.push_back(std::make_unique<Process>(
        std::vector<std::string>{autonous_bin(), "worker"},
        env(stub, {{"WORKER_ID", "p" + std::to_string(p)}, {"WORKER_CONCURRENCY", "4"}}),
        dir_.path().string()));
  const auto started_by = std::chrono::steady_clock::now() + seconds(30);
  for (auto& w : workers) {
    while (w->stderr_text().find("worker started") == std::string::npos &&
           std::chrono::steady_clock::now() < started_by)
      std::this_thread::sleep_for(milliseconds(20));
    ASSERT_NE(w->stderr_text().find("worker started"), std::string::npos) << w->stderr_text();
  }
  enqueue_sql(/*chats=*/50, /*per_chat=*/4);
  const auto done_by = std::chrono::steady_clock::now() + seconds(60);
  while (num("SELECT count(*) FROM tasks WHERE status IN ('done', 'failed')") < 200 &&
         std::chrono::steady_clock::now() < done_by)
    std::this_thread::sleep_for(milliseconds(50));
  for (auto& w : workers) w->signal(SIGTERM);
  for (auto& w : workers) {
    const auto r = w->wait(seconds(30));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->exit_code, 0) << r->err;
    EXPECT_EQ(r->err.find("database is locked"), std::string::npos) << r->err;
  }
  expect_exactly_once(200);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'llm.retry'"), 0);  // no BUSY errors
  // Completed turns per process, through each turn's agent.started parent.
  std::map<int64_t, std::string> claimed_by;  // agent.started id → its worker
  std::map<std::string, int64_t> completed;
  for (const auto& e : events()) {
    if (e["type"] == "agent.started")
      claimed_by[e["id"].get<int64_t>()] = e["payload"].value("worker_id", "");
    if (e["type"] == "turn.completed" && e["parent_id"].is_number())
      ++completed[claimed_by[e["parent_id"].get<int64_t>()]];
  }
  int64_t total = 0;
  for (int p = 0; p < 4; ++p) {
    const int64_t n = completed["p" + std::to_string(p)];
    total += n;
    EXPECT_GE(n, 20) << "process p" << p << " starved (a fair share is 50 of 200)";
  }
  EXPECT_EQ(total, 200);
}

TEST_F(WorkerE2eTest, TheApiKeyIsSentButAppearsInNoLogEventOrTable) {
  StubServer stub(dir_.path().string());
  enqueue("a", "hello");
  enqueue("b", "[[stub:401]]");
  enqueue("c", "[[stub:500*1]]");
  const auto r = drain(stub, {{"LOG_LEVEL", "trace"}, {"LOG_FORMAT", "json"}});
  // It was sent, as a bearer token.
  bool sent = false;
  for (const auto& line : stub.log_lines())
    sent |= json::parse(line)["authorization"] == "Bearer " + kKey;
  EXPECT_TRUE(sent);
  EXPECT_EQ(r.out.find(kKey), std::string::npos);
  EXPECT_EQ(r.err.find(kKey), std::string::npos);
  for (const std::string& file : {db_, db_ + "-wal"}) {
    if (!std::filesystem::exists(file)) continue;
    EXPECT_EQ(read_file(file).find(kKey), std::string::npos) << file;
  }
  const auto events = autonous(dir_, {"events"}, db_env());
  EXPECT_EQ(events.out.find(kKey), std::string::npos);
  EXPECT_GT(events.out.size(), 100u);
}

TEST_F(WorkerE2eTest, RequeuePutsFailedTasksBackForAnotherRun) {
  StubServer stub(dir_.path().string());
  enqueue("a", "[[stub:503*1]]");
  auto r = drain(stub, {{"TASK_MAX_ATTEMPTS", "1"}});
  EXPECT_EQ(str("SELECT status FROM tasks"), "failed");
  r = autonous(dir_, {"requeue", "--task", "1"}, db_env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = autonous(dir_, {"requeue", "--task", "1"}, db_env());
  EXPECT_EQ(r.exit_code, 1);  // not failed any more
  drain(stub, {{"TASK_MAX_ATTEMPTS", "1"}});
  expect_exactly_once(1);
}

}  // namespace
}  // namespace autonous::testing
