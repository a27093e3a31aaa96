#pragma once
// HttpTransport: one HTTP POST, the seam between the OpenAI client and the network.
// CurlTransport is the real one; tests script responses with a fake. Any status code is a
// response; only failing to get one (connect, timeout, reset, abort) throws.

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autonous::openai {

struct HttpRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{120000};
  // The response body may hold at most this many bytes, counted after decoding (gzip): more
  // stops the transfer with ResponseTooLargeError, so memory stays bounded per request.
  size_t max_body_bytes = 8u << 20;
  // False: the body is read and dropped (no limit, nothing kept): only the status matters.
  bool keep_body = true;
  // Polled often (at least once a second) while the request is in flight; false aborts it
  // (lease lost, hard shutdown). May be empty.
  std::function<bool()> keep_going;
  // Told each piece of the response body as it arrives (after decoding), before post() returns
  // (a streamed reply read as it is written); returns false when it took the piece itself:
  // then the piece is not kept in the body nor counted against max_body_bytes. May be empty.
  std::function<bool(std::string_view)> on_body;
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased; last value wins
  std::string body;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Performs `request`. Throws TransportError when no HTTP response was received.
  virtual HttpResponse post(const HttpRequest& request) = 0;
};

}  // namespace autonous::openai
