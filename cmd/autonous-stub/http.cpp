#include "cmd/autonous-stub/http.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

namespace autonous::stub {
namespace {

// Appends what recv returns to `buffer`; false on EOF or an error.
bool receive_more(int fd, std::string& buffer) {
  char chunk[65536];
  const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
  if (n <= 0) return false;
  buffer.append(chunk, static_cast<size_t>(n));
  return true;
}

// Parses the header lines after the request line (`head` from its first "\r\n") into `headers`.
void parse_headers(const std::string& head, size_t line_end, Headers& headers) {
  headers.clear();
  while (line_end != std::string::npos) {
    const size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    const std::string line =
        head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    headers[name] = value;
  }
}

bool peer_closed(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  char c = 0;
  return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

std::string status_text(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

std::string status_and_type(int status, const std::string& content_type) {
  return "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
         "\r\nContent-Type: " + content_type + "\r\n";
}

}  // namespace

int listen_loopback(int port, int& bound_port) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 512) != 0) {
    std::cerr << "autonous-stub: cannot listen on 127.0.0.1:" << port << ": "
              << std::strerror(errno) << "\n";
    return -1;
  }
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  bound_port = ntohs(addr.sin_port);
  return listener;
}

int accept_client(int listener) {
  const int fd = ::accept(listener, nullptr, nullptr);
  if (fd < 0) return -1;
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

bool read_request(int fd, std::string& buffer, Request& req) {
  size_t header_end = std::string::npos;
  while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    if (!receive_more(fd, buffer)) return false;
  }
  const std::string head = buffer.substr(0, header_end);
  buffer.erase(0, header_end + 4);
  const size_t line_end = head.find("\r\n");
  const std::string request_line = head.substr(0, line_end);
  const auto sp1 = request_line.find(' ');
  const auto sp2 = request_line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) return false;
  req.method = request_line.substr(0, sp1);
  req.path = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (const size_t q = req.path.find('?'); q != std::string::npos) {  // Azure's ?api-version=…
    req.query = req.path.substr(q + 1);
    req.path.resize(q);
  }
  parse_headers(head, line_end, req.headers);
  size_t length = 0;
  if (auto it = req.headers.find("content-length"); it != req.headers.end())
    length = std::stoul(it->second);
  while (buffer.size() < length) {
    if (!receive_more(fd, buffer)) return false;
  }
  req.body = buffer.substr(0, length);
  buffer.erase(0, length);
  return true;
}

std::string response_head(int status, size_t length, const Headers& extra,
                          const std::string& content_type) {
  std::string out = status_and_type(status, content_type);
  out += "Content-Length: " + std::to_string(length) + "\r\n";
  for (const auto& [k, v] : extra) out += k + ": " + v + "\r\n";
  return out + "\r\n";
}

std::string response(int status, const std::string& body, const Headers& extra,
                     const std::string& content_type) {
  return response_head(status, body.size(), extra, content_type) + body;
}

std::string chunked_response(const std::vector<std::string>& parts) {
  std::string out = status_and_type(200, kJsonType) + "Transfer-Encoding: chunked\r\n\r\n";
  for (const std::string& part : parts) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", part.size());
    out += size + part + "\r\n";
  }
  return out + "0\r\n\r\n";
}

std::string openai_error(const std::string& message, const std::string& type, const json& code) {
  return json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}}
      .dump();
}

std::string http_date(Clock::time_point t) {
  const std::time_t tt = Clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

bool wait_for_peer_close(int fd, Clock::time_point until) {
  while (Clock::now() < until && !peer_closed(fd))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return Clock::now() < until;
}

}  // namespace autonous::stub
