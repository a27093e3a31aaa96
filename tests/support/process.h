#pragma once
// Running the real binaries from tests: fork/exec with a controlled environment, stdin text,
// captured stdout/stderr (to files, so nothing blocks), timeouts and signals.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace autonous::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
};

// The environment of the test process minus every variable autonous reads, plus `env`.
std::vector<std::string> clean_env(const std::map<std::string, std::string>& env);

class Process {
 public:
  // Starts argv[0] with `env` (see clean_env). `stdin_text` is written to its stdin, then
  // closed. Output goes to files in `dir`.
  Process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
          const std::string& dir, const std::string& stdin_text = "");
  ~Process();  // kills (SIGKILL) and reaps a process still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const noexcept { return pid_; }
  void signal(int sig) const;
  // Waits up to `timeout`; nullopt if still running then.
  std::optional<ProcessResult> wait(std::chrono::milliseconds timeout);
  std::string stdout_text() const;
  std::string stderr_text() const;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string out_path_;
  std::string err_path_;
};

// Runs to completion (killing it after `timeout`, which fails the calling test's expectations
// through exit_code -1).
ProcessResult run(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env, const std::string& dir,
                  const std::string& stdin_text = "",
                  std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace autonous::testing
