#include "cmd/autonous-stub/hostile.h"

#include <stdexcept>

#include <zlib.h>

namespace autonous::stub {
namespace {

size_t size_arg(const Fault& fault, size_t fallback) {
  return fault.arg.empty() ? fallback : static_cast<size_t>(std::stoull(fault.arg));
}

bool deep(int fd, const Fault& fault) {
  const size_t levels = size_arg(fault, 100000);
  const std::string body = R"({"choices":[{"message":{"content":)" + std::string(levels, '[') +
                           std::string(levels, ']') + "}}]}";
  return send_all(fd, response(200, body));
}

bool huge(int fd, const Fault& fault) {
  const size_t bytes = size_arg(fault, size_t{1} << 30);
  const std::string head = R"({"choices":[{"message":{"content":")";
  const std::string tail = R"("},"finish_reason":"stop"}]})";
  if (!send_all(fd, response_head(200, head.size() + bytes + tail.size()) + head)) return false;
  const std::string block(1 << 16, 'x');
  for (size_t sent = 0; sent < bytes; sent += block.size())
    if (!send_all(fd, block.substr(0, std::min(block.size(), bytes - sent)))) return false;
  return send_all(fd, tail);
}

bool endless(int fd) {
  std::string head =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  if (!send_all(fd, head)) return false;
  const std::string chunk = "10000\r\n" + std::string(1 << 16, ' ') + "\r\n";
  while (send_all(fd, chunk)) {
  }
  return false;  // the client hung up
}

// `bytes` zeros as a gzip stream, compressed in pieces so the stub itself stays small.
std::string gzip_zeros(size_t bytes) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::string out;
  std::string zeros(1 << 20, '\0');
  std::string buf(1 << 16, '\0');
  for (size_t left = bytes;;) {
    const size_t n = std::min(left, zeros.size());
    left -= n;
    z.next_in = reinterpret_cast<Bytef*>(zeros.data());
    z.avail_in = static_cast<uInt>(n);
    const int flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    int rc = Z_OK;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf.data());
      z.avail_out = static_cast<uInt>(buf.size());
      rc = deflate(&z, flush);
      out.append(buf.data(), buf.size() - z.avail_out);
    } while (z.avail_out == 0);
    if (flush == Z_FINISH && rc == Z_STREAM_END) break;
  }
  deflateEnd(&z);
  return out;
}

bool gzip_bomb(int fd, const Fault& fault) {
  const std::string body = gzip_zeros(size_arg(fault, size_t{1} << 30));
  return send_all(fd, response(200, body, {{"Content-Encoding", "gzip"}}));
}

bool echo_key(int fd, const Request& req) {
  const auto it = req.headers.find("authorization");
  const std::string auth = it == req.headers.end() ? "" : it->second;
  return send_all(fd, response(401, openai_error("Incorrect API key provided: " + auth +
                                                     " (you sent: " + auth + ")",
                                                 "invalid_request_error", "invalid_api_key")));
}

}  // namespace

std::optional<bool> answer_hostile(int fd, const Fault& fault, const Request& req) {
  const std::string& k = fault.kind;
  if (k == "deep") return deep(fd, fault);
  if (k == "huge") return huge(fd, fault);
  if (k == "endless") return endless(fd);
  if (k == "gzipbomb") return gzip_bomb(fd, fault);
  if (k == "echokey") return echo_key(fd, req);
  if (k == "hugeerror")
    return send_all(fd, response(502, std::string(size_arg(fault, 1 << 20), 'x'), {}, "text/html"));
  if (k == "down")
    return send_all(fd, response(503, openai_error("the service is down", "server_error",
                                                   "service_unavailable")));
  return std::nullopt;
}

}  // namespace autonous::stub
