#include "tests/support/process.h"

#include <atomic>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/temp_dir.h"

extern char** environ;

namespace autonous::testing {
namespace {

std::atomic<int> g_counter{0};

bool autonous_variable(const std::string& name) {
  static const char* kNames[] = {"DB_PATH",
                                 "OPENAI_",
                                 "SYSTEM_PROMPT",
                                 "HISTORY_WINDOW",
                                 "MAX_CONTEXT_TOKENS",
                                 "MAX_CHARS_PER_MESSAGE",
                                 "WORKER_",
                                 "POLL_INTERVAL_MS",
                                 "TASK_",
                                 "LLM_TIMEOUT_SECONDS",
                                 "LOG_LEVEL",
                                 "LOG_FORMAT",
                                 "SQLITE_",
                                 "RETRY_",
                                 "SHUTDOWN_GRACE_SECONDS",
                                 "TOKEN",
                                 "REPLY_WEBHOOK_",
                                 "STREAM_"};
  for (const char* n : kNames) {
    if (name.rfind(n, 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> clean_env(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    if (!autonous_variable(name) && env.count(name) == 0) out.push_back(kv);
  }
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  // The built token tables in a folder of the tests' own, not the user's ~/.cache (the
  // processes of every test share it, as a machine's workers do).
  if (env.count("TOKENIZER_CACHE_DIR") == 0)
    out.push_back(
        "TOKENIZER_CACHE_DIR=" +
        (std::filesystem::temp_directory_path() / "autonous-tests-tokenizer-cache").string());
  return out;
}

Process::Process(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env, const std::string& dir,
                 const std::string& stdin_text) {
  const int n = g_counter++;
  out_path_ = dir + "/proc" + std::to_string(n) + ".out";
  err_path_ = dir + "/proc" + std::to_string(n) + ".err";
  const std::string in_path = dir + "/proc" + std::to_string(n) + ".in";
  {
    std::ofstream in(in_path, std::ios::binary);
    in << stdin_text;
  }
  std::vector<std::string> env_strings = clean_env(env);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argvp;
  for (auto& s : args) argvp.push_back(s.data());
  argvp.push_back(nullptr);

  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int in = open(in_path.c_str(), O_RDONLY);
    const int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    // Unblock everything the test runner may have blocked.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(argvp[0], argvp.data(), envp.data());
    _exit(127);
  }
}

Process::~Process() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void Process::signal(int sig) const {
  if (!reaped_) kill(pid_, sig);
}

std::optional<ProcessResult> Process::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reaped_ = true;
  ProcessResult result;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = stdout_text();
  result.err = stderr_text();
  return result;
}

std::string Process::stdout_text() const { return read_file(out_path_); }
std::string Process::stderr_text() const { return read_file(err_path_); }

ProcessResult run(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env, const std::string& dir,
                  const std::string& stdin_text, std::chrono::milliseconds timeout) {
  Process p(argv, env, dir, stdin_text);
  if (auto r = p.wait(timeout)) return *r;
  p.signal(SIGKILL);
  auto r = p.wait(std::chrono::seconds(10));
  ProcessResult killed = r.value_or(ProcessResult{});
  killed.exit_code = -1;
  killed.err += "\n[test: killed after timeout]";
  return killed;
}

}  // namespace autonous::testing
