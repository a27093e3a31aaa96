#include "internal/ops/http_server.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

namespace autonous::ops {
namespace {

using SteadyClock = std::chrono::steady_clock;

int remaining_ms(SteadyClock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

int bind_listener(const config::ListenAddress& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (const int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    throw std::runtime_error("cannot resolve " + address.to_string() + ": " + gai_strerror(rc));
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    const int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) throw std::runtime_error("cannot listen on " + address.to_string() + ": " + error);
  return fd;
}

int bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

// Writes all of `data` before `deadline`, giving up too when the peer took no byte for
// `stall`; false when the peer is gone or too slow.
bool write_all(int fd, const std::string& data, SteadyClock::time_point deadline,
               std::chrono::milliseconds stall) {
  size_t sent = 0;
  SteadyClock::time_point moved = SteadyClock::now();
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      moved = SteadyClock::now();
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    pollfd p{fd, POLLOUT, 0};
    const int wait = remaining_ms(std::min(deadline, moved + stall));
    if (wait == 0 || poll(&p, 1, wait) <= 0) return false;
  }
  return true;
}

// A connection whose request head is still arriving.
struct Pending {
  int fd = -1;
  SteadyClock::time_point deadline;
  std::string head;
};

// Reads what `c` has sent. 0 while incomplete; 200 when the head is complete (trimmed to it);
// otherwise the status to answer (400 closed early, 431 too big).
int read_more(Pending& c, size_t max_bytes) {
  char buf[2048];
  for (;;) {
    const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
    if (n == 0) return 400;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : 400;
    c.head.append(buf, static_cast<size_t>(n));
    if (const size_t end = c.head.find("\r\n\r\n"); end != std::string::npos) {
      c.head.resize(end + 4);
      return c.head.size() > max_bytes ? 431 : 200;
    }
    if (c.head.size() > max_bytes) return 431;
  }
}

std::string serialize(const HttpResponse& r, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + status_text(r.status) + "\r\n";
  out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  out += "Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n";
  for (const auto& [name, value] : r.headers) out += name + ": " + value + "\r\n";
  out += "\r\n";
  if (!head_only) out += r.body;
  return out;
}

HttpResponse plain(int status, const std::string& text) {
  HttpResponse r;
  r.status = status;
  r.body = text + "\n";
  return r;
}

}  // namespace

HttpServer::HttpServer(const config::ListenAddress& address,
                       std::function<HttpHandler()> make_handler, HttpLimits limits)
    : limits_(limits) {
  listener_ = bind_listener(address);
  port_ = bound_port(listener_);
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(listener_);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  // The server's threads take no signal (the command's own thread handles SIGTERM/SIGINT):
  // they inherit a mask with them blocked, whatever the creating thread's.
  sigset_t blocked;
  sigset_t previous;
  sigemptyset(&blocked);
  for (const int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE})
    sigaddset(&blocked, sig);
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  for (int i = 0; i < limits_.threads; ++i)
    threads_.emplace_back([this, make_handler] { serve_loop(make_handler, 0); });
  if (!limits_.priority_path.empty())
    threads_.emplace_back([this, make_handler] { serve_loop(make_handler, 1); });
  threads_.emplace_back([this] { accept_loop(); });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

HttpServer::~HttpServer() {
  {
    const std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  const char byte = 1;
  (void)!write(wake_[1], &byte, 1);
  for (auto& t : threads_) t.join();
  for (const auto& queue : queued_)
    for (const auto& [fd, head] : queue) close(fd);
  close(listener_);
  close(wake_[0]);
  close(wake_[1]);
}

namespace {

// Answers `status` without waiting on the peer, and closes.
void refuse(int fd, int status, const std::string& text) {
  const std::string r = serialize(plain(status, text), false);
  (void)!send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  close(fd);
}

}  // namespace

void HttpServer::enqueue(int fd, std::string head) {
  const bool priority =
      !limits_.priority_path.empty() && (head.rfind("GET " + limits_.priority_path + " ", 0) == 0 ||
                                         head.rfind("HEAD " + limits_.priority_path + " ", 0) == 0);
  auto& queue = queued_[priority ? 1 : 0];
  std::unique_lock lock(mu_);
  if (queue.size() >= limits_.max_queued) {
    lock.unlock();
    refuse(fd, 503, "busy: too many requests");
    return;
  }
  queue.emplace_back(fd, std::move(head));
  lock.unlock();
  cv_.notify_all();
}

// Accepts connections and reads their request heads, all on this one thread.
void HttpServer::accept_loop() {
  std::vector<Pending> pending;
  std::vector<pollfd> fds;
  for (;;) {
    fds.assign({{listener_, POLLIN, 0}, {wake_[0], POLLIN, 0}});
    auto next = SteadyClock::now() + std::chrono::hours(1);
    for (const Pending& c : pending) {
      fds.push_back({c.fd, POLLIN, 0});
      next = std::min(next, c.deadline);
    }
    if (poll(fds.data(), fds.size(), std::max(1, remaining_ms(next))) < 0) {
      if (errno != EINTR) {
        spdlog::warn("http: poll failed: {}", std::strerror(errno));
        usleep(10'000);
      }
      continue;
    }
    if (fds[1].revents != 0) break;
    const auto now = SteadyClock::now();
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& c = pending[i];
      const int status = fds[i + 2].revents != 0 ? read_more(c, limits_.max_request_bytes) : 0;
      if (status == 200) {
        enqueue(c.fd, std::move(c.head));
      } else if (status != 0 || now >= c.deadline) {
        const int code = status != 0 ? status : 408;
        refuse(c.fd, code, status_text(code));
      } else {
        continue;
      }
      c.fd = -1;
    }
    std::erase_if(pending, [](const Pending& c) { return c.fd < 0; });
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) usleep(10'000);  // out of descriptors: back off
      continue;
    }
    if (pending.size() >= limits_.max_connections) {
      // The oldest unfinished request makes room: a flood of idle connections cannot lock out
      // a prompt client (a health probe).
      refuse(pending.front().fd, 503, "busy: too many connections");
      pending.erase(pending.begin());
    }
    const int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    pending.push_back({fd, now + limits_.read_deadline, {}});
  }
  for (const Pending& c : pending) close(c.fd);
}

void HttpServer::serve_loop(const std::function<HttpHandler()>& make_handler, int lane) {
  HttpHandler handler;
  try {
    handler = make_handler();
  } catch (const std::exception& e) {
    spdlog::error("http: a server thread could not start: {}", e.what());
  }
  auto& queue = queued_[lane];
  for (;;) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this, &queue] { return stopping_ || !queue.empty(); });
    if (stopping_) return;
    auto [fd, head] = std::move(queue.front());
    queue.pop_front();
    lock.unlock();
    serve(fd, head, handler);
    close(fd);
  }
}

void HttpServer::serve(int fd, const std::string& head, const HttpHandler& handler) const {
  HttpRequest request;
  HttpResponse response;
  if (!parse_request_head(head, request)) {
    response = plain(400, "bad request");
  } else if (request.method != "GET" && request.method != "HEAD") {
    response = plain(405, "read-only: GET and HEAD only");
    response.headers.emplace_back("Allow", "GET, HEAD");
  } else if (!handler) {
    response = plain(503, "unavailable");
  } else {
    try {
      response = handler(request);
    } catch (const std::exception& e) {
      spdlog::warn("http: {} {:?} failed: {}", request.method, request.path, e.what());
      response = plain(500, "internal error (see the worker's log)");
    } catch (...) {
      response = plain(500, "internal error");
    }
  }
  write_all(fd, serialize(response, request.method == "HEAD"),
            SteadyClock::now() + limits_.write_deadline, limits_.write_stall);
  shutdown(fd, SHUT_WR);
}

}  // namespace autonous::ops
