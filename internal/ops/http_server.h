#pragma once
// HttpServer: a small HTTP/1.1 server for the operator surface (GET and HEAD, no bodies, one
// request per connection). Built for hostile clients rather than speed: one thread reads every
// connection's request head with poll(), each within `read_deadline` of its accept and
// `max_request_bytes` (else 408 / 431 and closed); only complete requests reach the fixed pool
// of `threads` that answer them (each response written within `write_deadline`), and requests
// for `priority_path` (/healthz) to a thread of their own. Past `max_connections` the oldest
// unfinished connection is dropped; requests past `max_queued` are refused with 503 at once. A slow
// or garbage client therefore never holds a serving thread, and never touches the worker's slots.
//
// Why not cpp-httplib (Debian's libcpp-httplib-dev 0.11.4): its timeouts bound each read, not a
// request (a client sending a byte every few seconds holds a thread for hours), and its pool's
// queue is unbounded.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "internal/config/listen_address.h"

namespace autonous::ops {

struct HttpRequest {
  std::string method;                          // GET or HEAD
  std::string path;                            // percent-decoded, without the query
  std::map<std::string, std::string> query;    // percent-decoded; the last of a repeated key
  std::map<std::string, std::string> headers;  // names lower-cased
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones
};

// Answers one request. Called on a pool thread; an exception becomes a 500 without its text.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpLimits {
  size_t max_request_bytes = 8192;  // request line and headers
  std::chrono::milliseconds read_deadline{5000};
  std::chrono::milliseconds write_deadline{5000};
  // A client that takes no byte of its answer for this long is dropped: one that never reads
  // holds a serving thread no longer than this.
  std::chrono::milliseconds write_stall{1000};
  int threads = 2;
  // Requests for this path have a thread of their own (a health probe is never stuck behind
  // slow pages); empty: none.
  std::string priority_path = "/healthz";
  size_t max_connections = 128;  // connections still sending their request (then the oldest
                                 // is dropped for a new one)
  size_t max_queued = 32;        // complete requests waiting for a thread
};

class HttpServer {
 public:
  // Binds `address` and starts serving. `make_handler` is called once on each pool thread (a
  // handler may own per-thread resources such as a database connection). Throws
  // std::runtime_error when the address cannot be bound.
  HttpServer(const config::ListenAddress& address, std::function<HttpHandler()> make_handler,
             HttpLimits limits = {});
  ~HttpServer();  // stops: no new connection; waits for the requests in progress
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const noexcept { return port_; }  // the bound port (for port 0)

 private:
  void accept_loop();
  void serve_loop(const std::function<HttpHandler()>& make_handler, int lane);
  void serve(int fd, const std::string& head, const HttpHandler& handler) const;
  // Hands a complete request head to the pool, or answers 503 when its queue is full.
  void enqueue(int fd, std::string head);

  HttpLimits limits_;
  int listener_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<int, std::string>> queued_[2];  // socket and request head; [1]: priority
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Parses a request head (up to and including the blank line). False when it is malformed.
bool parse_request_head(const std::string& head, HttpRequest& out);

// "%41+b" → "A b" (with `plus_is_space`); false on a bad escape.
bool percent_decode(const std::string& in, std::string& out, bool plus_is_space);

// The reason phrase of a status code ("Not Found").
const char* status_text(int status);

}  // namespace autonous::ops
