#pragma once
// The stub's HTTP/1.1 over a plain loopback socket: listening, reading one request (Content-Length
// bodies only), writing whole, truncated or chunked responses, waiting on an idle peer, and the
// OpenAI-shaped error body every error response carries.

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace autonous::stub {

using nlohmann::json;
using Clock = std::chrono::system_clock;
using Headers = std::map<std::string, std::string>;

inline constexpr char kJsonType[] = "application/json";

struct Request {
  std::string method;
  std::string path;   // without the query
  std::string query;  // after '?', "" when none
  Headers headers;    // names lower-cased
  std::string body;
};

// Listens on 127.0.0.1:port (0: any free port): the socket, with the port it got in
// `bound_port`; -1, said on stderr, when it cannot.
int listen_loopback(int port, int& bound_port);

// Waits for the next connection on `listener`: its socket, with TCP_NODELAY set, or -1.
int accept_client(int listener);

// Sends all of `data`; false when the peer is gone.
bool send_all(int fd, const std::string& data);

// Reads the next request from fd, keeping bytes past it in `buffer` for the next call; false on
// EOF or a malformed request line.
bool read_request(int fd, std::string& buffer, Request& req);

// The status line and headers of a response, up to and including the blank line. `length` is the
// Content-Length announced, whatever follows.
std::string response_head(int status, size_t length, const Headers& extra = {},
                          const std::string& content_type = kJsonType);

// A whole response: response_head for `body`, then `body`.
std::string response(int status, const std::string& body, const Headers& extra = {},
                     const std::string& content_type = kJsonType);

// A 200 JSON response in Transfer-Encoding: chunked, one chunk per part.
std::string chunked_response(const std::vector<std::string>& parts);

// {"error": {"message", "type", "param": null, "code"}}, as OpenAI sends it.
std::string openai_error(const std::string& message, const std::string& type, const json& code);

// An HTTP date (RFC 7231 IMF-fixdate), as in Retry-After.
std::string http_date(Clock::time_point t);

// Waits until the peer closes fd or `until` passes; true when the peer closed first.
bool wait_for_peer_close(int fd, Clock::time_point until);

}  // namespace autonous::stub
