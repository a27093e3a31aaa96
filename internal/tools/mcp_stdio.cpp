#include "internal/tools/mcp_stdio.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace autonous::tools {
namespace {

using nlohmann::json;

std::string resolve(const std::string& server, const std::string& program, const Headers& env) {
  if (program.find('/') != std::string::npos) {
    if (::access(program.c_str(), X_OK) != 0)
      throw McpError(server + ": cannot run " + program + ": " + std::strerror(errno));
    return program;
  }
  for (const auto& [k, v] : env) {
    if (k != "PATH") continue;
    size_t start = 0;
    while (start <= v.size()) {
      const size_t end = v.find(':', start);
      const std::string dir =
          v.substr(start, end == std::string::npos ? std::string::npos : end - start);
      const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  throw McpError(server + ": " + program +
                 " not found: give its path, or a PATH in the server's env that holds it");
}

}  // namespace

McpStdio::McpStdio(std::string server, std::vector<std::string> command, Headers env)
    : server_(std::move(server)), command_(std::move(command)), env_(std::move(env)) {
  if (command_.empty()) throw McpError(server_ + ": no command");
  path_ = resolve(server_, command_[0], env_);
  spawn();
}

McpStdio::~McpStdio() { stop(); }

void McpStdio::spawn() {
  int in[2];
  int out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) throw McpError(server_ + ": pipe: " + std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    throw McpError(server_ + ": pipe: " + std::strerror(errno));
  }
  // Everything the child needs, built before fork (no allocation after it).
  std::vector<std::string> env_text;
  for (const auto& [k, v] : env_) env_text.push_back(k + "=" + v);
  std::vector<char*> argv;
  for (std::string& a : command_) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (const int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    throw McpError(server_ + ": fork: " + std::strerror(errno));
  }
  if (pid == 0) {
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, STDERR_FILENO);
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // a worker thread's blocked stop signals
    ::execve(path_.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  pid_ = pid;
  to_child_ = in[1];
  from_child_ = out[0];
  buffer_.clear();
}

void McpStdio::stop() {
  if (pid_ <= 0) return;
  if (to_child_ >= 0) ::close(to_child_);
  to_child_ = -1;
  // A server ends when its stdin closes; one that does not within a moment is killed.
  for (int i = 0; i < 20; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  if (from_child_ >= 0) ::close(from_child_);
  from_child_ = -1;
}

void McpStdio::write_line(const std::string& line) {
  if (pid_ <= 0 || ::waitpid(pid_, nullptr, WNOHANG) == pid_) {
    pid_ = -1;
    stop();
    spawn();
    throw McpServerExited(server_ + ": the server process had exited; started again");
  }
  std::string data = line + "\n";
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(to_child_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      stop();
      spawn();
      throw McpServerExited(server_ + ": writing to the server failed; started again");
    }
    done += static_cast<size_t>(n);
  }
}

void McpStdio::send(const json& message) {
  write_line(message.dump(-1, ' ', false, json::error_handler_t::replace));
}

json McpStdio::exchange(const json& request, std::chrono::milliseconds timeout,
                        const std::function<bool()>& keep_going, const OnMessage& on_message) {
  send(request);
  const json id = request.contains("id") ? request["id"] : json();
  if (id.is_null()) return nullptr;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // A whole line in the buffer: one message.
    for (size_t nl = buffer_.find('\n'); nl != std::string::npos; nl = buffer_.find('\n')) {
      const std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
      const json m = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (m.is_discarded()) continue;  // a stray line on stdout: not JSON-RPC
      if (m.is_object() && m.contains("id") && m["id"] == id && !m.contains("method")) return m;
      if (on_message) on_message(m);
    }
    if (buffer_.size() > kMaxMcpLineBytes) {
      stop();
      spawn();
      throw McpServerExited(server_ + ": a message over " + std::to_string(kMaxMcpLineBytes) +
                            " bytes; the server was started again");
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      throw McpError(server_ + ": no answer within " + std::to_string(timeout.count()) + " ms");
    if (keep_going && !keep_going()) throw McpError(server_ + ": aborted");
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    pollfd p{from_child_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 200)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char chunk[65536];
    const ssize_t n = ::read(from_child_, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      stop();
      spawn();
      throw McpServerExited(server_ + ": the server process exited; started again");
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace autonous::tools
