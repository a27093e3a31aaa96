// A SQLite deployment's own file, end to end (ctest's label e2e, SQLite only): a read-only copy
// can still be inspected, and a worker whose file is deleted or replaced stops saying so.

#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/e2e/e2e_support.h"

namespace autonous::testing {
namespace {

using std::chrono::seconds;

class SqliteFileE2eTest : public E2eTest {};

TEST_F(SqliteFileE2eTest, AReadOnlyDatabaseCanStillBeInspected) {
  enqueue("a", "hello");
  // A read-only folder and file (a copy handed to an operator, a read-only mount). As root the
  // permissions do not bind, so the commands run as `nobody` there.
  std::filesystem::permissions(
      dir_.path(), std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                       std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                       std::filesystem::perms::others_exec);
  for (const auto& f : std::filesystem::directory_iterator(dir_.path()))
    std::filesystem::permissions(f.path(), std::filesystem::perms::owner_read |
                                               std::filesystem::perms::group_read |
                                               std::filesystem::perms::others_read);
  std::vector<std::string> prefix;
  if (geteuid() == 0) {
    if (!std::filesystem::exists("/usr/bin/setpriv")) GTEST_SKIP() << "needs setpriv as root";
    prefix = {"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"};
    std::filesystem::permissions(dir_.path(), std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::remove);
  } else {
    std::filesystem::permissions(dir_.path(), std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::remove);
  }
  auto as_reader = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = prefix;
    argv.push_back(autonous_bin());
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, db_env(), "/", "", seconds(30));
  };
  const auto status = as_reader({"status"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("queued   1"), std::string::npos) << status.out;
  const auto events = as_reader({"events"});
  EXPECT_EQ(events.exit_code, 0) << events.err;
  const auto enqueue = as_reader({"enqueue", "--chat", "a", "more"});
  EXPECT_EQ(enqueue.exit_code, 1);  // writing stays refused, with SQLite's reason
  EXPECT_NE(enqueue.err.find("readonly"), std::string::npos) << enqueue.err;
  std::filesystem::permissions(dir_.path(), std::filesystem::perms::owner_all);  // clean-up
}

TEST_F(SqliteFileE2eTest, AWorkerWhoseDatabaseFileIsDeletedOrReplacedStopsSayingSo) {
  StubServer stub(dir_.path().string());
  for (const std::string how : {"deleted", "replaced"}) {
    SCOPED_TRACE(how);
    enqueue("a", "hello");
    Process worker({autonous_bin(), "worker"}, env(stub, {{"LOG_FORMAT", "json"}}),
                   dir_.path().string());
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    while (num("SELECT count(*) FROM tasks WHERE status = 'done'") < 1 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (how == "deleted") {
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db_ + suffix);
    } else {
      std::filesystem::copy_file(db_, db_ + ".new");
      std::filesystem::rename(db_ + ".new", db_);
    }
    // Before: it kept running, writing into an unlinked file nothing reads.
    const auto r = worker.wait(seconds(10));
    ASSERT_TRUE(r) << "the worker kept running";
    EXPECT_EQ(r->exit_code, 1);
    EXPECT_NE(r->err.find("was " + how), std::string::npos) << r->err;
    // Under LOG_FORMAT=json the last words are a JSON line too.
    std::istringstream lines(r->err);
    for (std::string line; std::getline(lines, line);)
      EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  }
}

// The unit's UMask=0007 (front ends in the group autonous share the queue): SQLite alone makes
// the file 0640 and its -wal/-shm alike, whatever the umask; the files get what it allows.
TEST_F(SqliteFileE2eTest, TheDatabaseFilesGetWhatTheUmaskAllows) {
  namespace fs = std::filesystem;
  const std::string db = dir_.file("shared.db");
  for (const auto& [mask, want] : {std::pair{"007", fs::perms(0660)}, {"022", fs::perms(0644)}}) {
    SCOPED_TRACE(mask);
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db + suffix);
    // A worker holding the database open: its -wal and -shm exist.
    Process held({"/bin/sh", "-c", std::string("umask ") + mask + "; exec \"$0\" \"$@\"",
                  autonous_bin(), "worker"},
                 {{"DB_PATH", db}, {"OPENAI_BASE_URL", "http://127.0.0.1:9/v1"}},
                 dir_.path().string());
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    while (!fs::exists(db + "-shm") && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (const char* suffix : {"", "-wal", "-shm"}) {
      ASSERT_TRUE(fs::exists(db + suffix)) << suffix;
      EXPECT_EQ(fs::status(db + suffix).permissions() & fs::perms::all, want) << suffix;
    }
  }
}

TEST_F(SqliteFileE2eTest, AChatIdThatIsNotTextFailsAtOnceWithoutACall) {
  // SQLite takes a BLOB into a TEXT column; its history could never be stored (it used to cost
  // five LLM calls before the history's CHECK refused it each time).
  StubServer stub(dir_.path().string());
  const int64_t fine = enqueue("ok", "hello");  // (migrates the new file)
  exec_sql("INSERT INTO tasks(chat_id, text) VALUES (X'00FF', 'hello')");
  drain(stub);
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'failed' AND error LIKE "
                "'chat_id is not UTF-8 text%'"),
            1);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(fine)), "done");
  EXPECT_EQ(stub.log_lines().size(), 1u);  // the good task's call only
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'llm.request'"), 1);
  bool invalid = false;
  for (const auto& p : payloads("turn.failed")) invalid = invalid || p["reason"] == "invalid_task";
  EXPECT_TRUE(invalid);
  EXPECT_EQ(num("SELECT attempts FROM tasks WHERE status = 'failed'"), 1);
}

}  // namespace
}  // namespace autonous::testing
