// The CLI contract of DESIGN.md, through the real binary: commands, --help, exit codes,
// configuration errors naming the variable, enqueue/events/status/context behaviour.

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/e2e/e2e_support.h"

namespace autonous::testing {
namespace {

class CliTest : public ::testing::Test {
 protected:
  Env env(Env extra = {}) {
    extra.emplace("DB_PATH", db_);
    return extra;
  }
  TempDir dir_;
  std::string db_ = dir_.file("cli.db");
};

TEST_F(CliTest, EverySubcommandHasHelp) {
  const std::vector<std::vector<std::string>> commands = {
      {"migrate"},          {"enqueue"},       {"worker"},       {"context"},
      {"context", "stats"}, {"events"},        {"status"},       {"requeue"},
      {"tokens"},           {"chat"},          {"chat", "show"}, {"chat", "set"},
      {"chat", "reset"},    {"chat", "clear"}, {"cancel"},       {"wait"}};
  for (auto cmd : commands) {
    SCOPED_TRACE(cmd.back());
    cmd.push_back("--help");
    const auto r = autonous(dir_, cmd, env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("Usage:"), std::string::npos) << r.out;
  }
  const auto top = autonous(dir_, {"--help"}, env());
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("enqueue"), std::string::npos);
}

TEST_F(CliTest, UsageErrorsExitTwoAndNameTheFlag) {
  auto r = autonous(dir_, {}, env());
  EXPECT_EQ(r.exit_code, 2);
  r = autonous(dir_, {"frobnicate"}, env());
  EXPECT_EQ(r.exit_code, 2);
  r = autonous(dir_, {"enqueue", "hi"}, env());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--chat"), std::string::npos) << r.err;
  r = autonous(dir_, {"enqueue", "--chat", "a", "--priority", "high", "x"}, env());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--priority"), std::string::npos) << r.err;
  r = autonous(dir_, {"requeue"}, env());
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(CliTest, BadConfigurationExitsTwoNamingTheVariable) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"HISTORY_WINDOW", "10x"},       {"MAX_CONTEXT_TOKENS", "-5"},
      {"WORKER_CONCURRENCY", "0"},     {"LOG_LEVEL", "loud"},
      {"LOG_FORMAT", "yaml"},          {"SQLITE_SYNCHRONOUS", "OFF"},
      {"TASK_LEASE_SECONDS", "abc"},   {"POLL_INTERVAL_MS", "1e3"},
      {"OPENAI_BASE_URL", "localhost"}};
  for (const auto& [var, value] : bad) {
    SCOPED_TRACE(var);
    const auto r = autonous(dir_, {"status"}, env({{var, value}}));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(var), std::string::npos) << r.err;
  }
}

TEST_F(CliTest, WorkerRequiresTheBaseUrlAndABudgetThatHoldsTheSystemPrompt) {
  auto r = autonous(dir_, {"worker", "--drain"}, env());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("OPENAI_BASE_URL"), std::string::npos) << r.err;
  r = autonous(dir_, {"worker", "--drain"},
               env({{"OPENAI_BASE_URL", "http://127.0.0.1:9/v1"},
                    {"SYSTEM_PROMPT", std::string(400, 's')},
                    {"MAX_CONTEXT_TOKENS", "50"}}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("MAX_CONTEXT_TOKENS"), std::string::npos) << r.err;
}

TEST_F(CliTest, VersionComesFromTheProjectAndGitAndStartsTheWorkersLog) {
  const auto r = autonous(dir_, {"--version"}, env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // CMakeLists.txt's project(… VERSION x.y.z), and git's description of the commit when built
  // from a checkout.
  std::ifstream cmake(std::string(AUTONOUS_SOURCE_DIR) + "/CMakeLists.txt");
  const std::string lists((std::istreambuf_iterator<char>(cmake)), {});
  std::smatch project;
  ASSERT_TRUE(
      std::regex_search(lists, project, std::regex(R"(project\(autonous VERSION ([0-9.]+))")));
  std::string escaped;  // the version's dots, literally
  for (const char c : project.str(1)) escaped += c == '.' ? std::string("\\.") : std::string(1, c);
  EXPECT_TRUE(std::regex_match(
      r.out, std::regex("autonous " + escaped + R"(( \(git [0-9a-zA-Z.-]+\))?\n)")))
      << r.out;
  // The worker's first log line says which binary runs.
  const auto w = autonous(dir_, {"worker", "--drain"},
                          {{"DB_PATH", db_}, {"OPENAI_BASE_URL", "http://127.0.0.1:9/v1"}});
  EXPECT_EQ(w.exit_code, 0) << w.err;
  const std::string first = w.err.substr(0, w.err.find('\n'));
  EXPECT_NE(first.find(r.out.substr(0, r.out.size() - 1) + " worker starting"), std::string::npos)
      << w.err;
}

// The datagrams a worker sends to $NOTIFY_SOCKET (systemd's protocol, sd_notify(3)).
class NotifySocket {
 public:
  explicit NotifySocket(std::string path) : path_(std::move(path)) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << path_;
  }
  ~NotifySocket() { close(fd_); }
  // Every message received within `wait`.
  std::vector<std::string> read(std::chrono::milliseconds wait) {
    std::vector<std::string> out;
    const auto until = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) != 1) continue;
      char buf[4096];
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n > 0) out.emplace_back(buf, static_cast<size_t>(n));
    }
    return out;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

size_t count_with(const std::vector<std::string>& messages, const std::string& what) {
  size_t n = 0;
  for (const auto& m : messages) n += m.find(what) != std::string::npos;
  return n;
}

TEST_F(CliTest, UnderSystemdTheWorkerSaysReadyPingsItsWatchdogIgnoresSighupAndSaysStopping) {
  NotifySocket systemd(dir_.file("notify.sock"));
  // As a unit with Type=notify and WatchdogSec=1 starts it.
  Process worker({autonous_bin(), "worker"},
                 {{"DB_PATH", db_},
                  {"OPENAI_BASE_URL", "http://127.0.0.1:9/v1"},
                  {"NOTIFY_SOCKET", systemd.path()},
                  {"WATCHDOG_USEC", "1000000"}},
                 dir_.path().string());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (worker.stderr_text().find("worker started") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  worker.signal(SIGHUP);
  EXPECT_FALSE(worker.wait(std::chrono::milliseconds(1600))) << "SIGHUP stopped the worker";
  const auto running = systemd.read(std::chrono::milliseconds(100));
  EXPECT_EQ(count_with(running, "READY=1"), 1u);
  EXPECT_GE(count_with(running, "WATCHDOG=1"), 3u);  // every half second
  EXPECT_EQ(count_with(running, "STOPPING=1"), 0u);
  worker.signal(SIGTERM);
  const auto stopped = worker.wait(std::chrono::seconds(20));
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->exit_code, 0) << stopped->err;
  EXPECT_NE(stopped->err.find("SIGHUP ignored"), std::string::npos) << stopped->err;
  EXPECT_EQ(count_with(systemd.read(std::chrono::milliseconds(50)), "STOPPING=1"), 1u);
}

TEST_F(CliTest, AWatchdogInheritedForAnotherProcessIsNotPinged) {
  // WATCHDOG_PID names another process: the variables were inherited, not meant for this one.
  NotifySocket systemd(dir_.file("notify.sock"));
  const auto r = autonous(dir_, {"worker", "--drain"},
                          {{"DB_PATH", db_},
                           {"OPENAI_BASE_URL", "http://127.0.0.1:9/v1"},
                           {"NOTIFY_SOCKET", systemd.path()},
                           {"WATCHDOG_USEC", "1000000"},
                           {"WATCHDOG_PID", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count_with(systemd.read(std::chrono::milliseconds(50)), "WATCHDOG=1"), 0u);
}

TEST_F(CliTest, MigrateIsIdempotentAndPrintsTheVersion) {
  auto r = autonous(dir_, {"migrate"}, env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "schema version 24\n");
  r = autonous(dir_, {"migrate"}, env());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "schema version 24\n");
  EXPECT_EQ(query_int(db_, "SELECT count(*) FROM schema_migrations"), 24);
}

TEST_F(CliTest, ADatabaseFromANewerVersionIsRefused) {
  ASSERT_EQ(autonous(dir_, {"migrate"}, env()).exit_code, 0);
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec("INSERT INTO schema_migrations(version, name) VALUES (99, '0099_future')");
  }
  const auto r = autonous(dir_, {"status"}, env());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("newer"), std::string::npos) << r.err;
}

TEST_F(CliTest, EnqueueFromArgumentAndStdinPrintsIds) {
  auto r = autonous(dir_, {"enqueue", "--chat", "42", "hello there"}, env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
  r = autonous(dir_, {"enqueue", "--chat", "42", "--priority", "3"}, env(),
               "from stdin\nline two\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2\n");
  EXPECT_EQ(query_string(db_, "SELECT text FROM tasks WHERE id = 2"), "from stdin\nline two\n");
  EXPECT_EQ(query_int(db_, "SELECT priority FROM tasks WHERE id = 2"), 3);
  EXPECT_EQ(query_string(db_, "SELECT chat_id FROM tasks WHERE id = 1"), "42");
}

TEST_F(CliTest, EnqueueRefusesEmptyText) {
  for (const std::string text : {"", "   \n\t"}) {
    auto r = autonous(dir_, {"enqueue", "--chat", "a", text}, env());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("empty"), std::string::npos) << r.err;
    r = autonous(dir_, {"enqueue", "--chat", "a"}, env(), text);
    EXPECT_EQ(r.exit_code, 2);
  }
  EXPECT_EQ(autonous(dir_, {"enqueue", "--chat", "", "x"}, env()).exit_code, 2);
}

TEST_F(CliTest, FreshDbPathJustWorks) {
  const std::string fresh = dir_.file("sub-fresh.db");
  const auto r = autonous(dir_, {"status", "--json"}, {{"DB_PATH", fresh}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["queued"], 0);
  EXPECT_TRUE(j["oldest_queued_age_seconds"].is_null());
}

TEST_F(CliTest, StatusCountsAndShowsOldestQueuedAge) {
  autonous(dir_, {"enqueue", "--chat", "a", "x"}, env());
  autonous(dir_, {"enqueue", "--chat", "b", "y"}, env());
  auto r = autonous(dir_, {"status", "--json"}, env());
  ASSERT_EQ(r.exit_code, 0);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["queued"], 2);
  EXPECT_EQ(j["done"], 0);
  EXPECT_GE(j["oldest_queued_age_seconds"].get<double>(), 0.0);
  r = autonous(dir_, {"status"}, env());
  EXPECT_NE(r.out.find("queued   2"), std::string::npos) << r.out;
}

TEST_F(CliTest, EventsPrintsJsonLinesAndFilters) {
  autonous(dir_, {"migrate"}, env());
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec(
        "INSERT INTO events(type, task_id, chat_id, payload) VALUES "
        "('agent.started', 1, 'a', '{\"attempt\":1}'), ('turn.started', 1, 'a', '{}'), "
        "('agent.started', 2, 'b', '{\"attempt\":1}')");
  }
  auto count_lines = [](const std::string& s) {
    std::istringstream in(s);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      EXPECT_NO_THROW(nlohmann::json::parse(line)) << line;
      ++n;
    }
    return n;
  };
  auto r = autonous(dir_, {"events"}, env());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(count_lines(r.out), 3);
  EXPECT_EQ(count_lines(autonous(dir_, {"events", "--task", "1"}, env()).out), 2);
  EXPECT_EQ(count_lines(autonous(dir_, {"events", "--type", "agent.started"}, env()).out), 2);
  r = autonous(dir_, {"events", "--task", "2", "--type", "agent.started"}, env());
  ASSERT_EQ(count_lines(r.out), 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["chat_id"], "b");
  EXPECT_EQ(j["payload"]["attempt"], 1);
  EXPECT_EQ(autonous(dir_, {"events", "--task", "x"}, env()).exit_code, 2);
}

TEST_F(CliTest, EventsFollowPrintsNewEvents) {
  autonous(dir_, {"migrate"}, env());
  Process follow({autonous_bin(), "events", "--follow"}, env(), dir_.path().string());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec("INSERT INTO events(type, payload) VALUES ('late.event', '{}')");
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (follow.stdout_text().find("late.event") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_NE(follow.stdout_text().find("late.event"), std::string::npos);
}

TEST_F(CliTest, ContextDryRunPrintsMessagesAndFiguresAndWritesNothing) {
  autonous(dir_, {"migrate"}, env());
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.exec(
        "INSERT INTO history(chat_id, role, text) VALUES ('a', 'user', 'my name is Ada'), "
        "('a', 'assistant', 'hello Ada'), ('b', 'user', 'other chat')");
  }
  const auto r = autonous(dir_, {"context", "--chat", "a", "--text", "what is my name?"},
                          env({{"SYSTEM_PROMPT", "Be brief."}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["messages"].size(), 4u);
  EXPECT_EQ(j["messages"][0]["content"], "Be brief.");
  EXPECT_EQ(j["messages"][1]["content"], "my name is Ada");
  EXPECT_EQ(j["messages"][3]["content"], "what is my name?");
  EXPECT_EQ(j["original_count"], 2);
  EXPECT_EQ(j["dropped_count"], 0);
  // MAX_CONTEXT_TOKENS unset: gpt-4o-mini's preset, 128 000 − 16 384.
  EXPECT_EQ(j["budget_tokens"], 111616);
  EXPECT_EQ(j["level"], "none");
  EXPECT_EQ(j["strategy"], "token_budget");
  EXPECT_EQ(j["decision"].get<std::string>().rfind("none:", 0), 0u);
  EXPECT_EQ(query_int(db_, "SELECT count(*) FROM events"), 0);
  EXPECT_EQ(query_int(db_, "SELECT count(*) FROM tasks"), 0);
}

TEST_F(CliTest, ContextDryRunHonoursTheBudget) {
  autonous(dir_, {"migrate"}, env());
  {
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    for (int i = 0; i < 30; ++i)
      db.exec("INSERT INTO history(chat_id, role, text) VALUES ('a', 'user', '" +
              std::string(400, 'x') + "')");
  }
  const auto r = autonous(dir_, {"context", "--chat", "a", "--text", "hi"},
                          env({{"MAX_CONTEXT_TOKENS", "500"},
                               {"MAX_CHARS_PER_MESSAGE", "200"},
                               {"HISTORY_WINDOW", "20"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_LE(j["estimated_tokens"].get<int>(), 500);
  EXPECT_EQ(j["original_count"], 28);       // HISTORY_WINDOW + 8 (read_limit): a compaction is due
  EXPECT_EQ(j["compaction"], "threshold");  // over warn by tokens (and over the window)
  EXPECT_GT(j["dropped_count"].get<int>(), 0);
  EXPECT_GT(j["truncated_count"].get<int>(), 0);
  // A dry run stores nothing: the chat's state is as it was.
  EXPECT_EQ(query_int(db_, "SELECT count(*) FROM context_state"), 0);
}

TEST_F(CliTest, EnvFileFillsUnsetVariablesAndTheEnvironmentWins) {
  const std::string file = dir_.file("a.env");
  std::ofstream(file) << "# operator settings\nDB_PATH=" << dir_.file("from-file.db")
                      << "\nSYSTEM_PROMPT=from file\nHISTORY_WINDOW=7\n";
  auto r = autonous(dir_, {"--env-file", file, "context", "--chat", "a", "--text", "x"},
                    {{"SYSTEM_PROMPT", "from env"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["messages"][0]["content"], "from env");
  EXPECT_TRUE(std::filesystem::exists(dir_.file("from-file.db")));
  // Also accepted after the subcommand.
  r = autonous(dir_, {"status", "--env-file", file}, {});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = autonous(dir_, {"status", "--env-file", dir_.file("missing.env")}, {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--env-file"), std::string::npos);
}

TEST_F(CliTest, JsonLogsAreOneObjectPerLine) {
  const auto r = autonous(dir_, {"migrate"}, env({{"LOG_FORMAT", "json"}, {"LOG_LEVEL", "debug"}}));
  ASSERT_EQ(r.exit_code, 0);
  std::istringstream in(r.err);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_TRUE(j.contains("time"));
    EXPECT_TRUE(j.contains("level"));
    EXPECT_TRUE(j.contains("message"));
    ++n;
  }
  EXPECT_GE(n, 1);
  EXPECT_NE(r.err.find("\"version\":1,"), std::string::npos) << r.err;  // a field, a number
}

}  // namespace
}  // namespace autonous::testing
