// The request-head parsing half of http_server.h: strict, small, no allocation beyond the
// request's own strings.

#include <cctype>
#include <string_view>

#include "internal/common/text.h"
#include "internal/ops/http_server.h"

namespace autonous::ops {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool parse_query(std::string_view q, std::map<std::string, std::string>& out) {
  while (!q.empty()) {
    const size_t amp = q.find('&');
    const std::string_view pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string key;
    std::string value;
    if (!percent_decode(std::string(pair.substr(0, eq)), key, true)) return false;
    if (eq != std::string_view::npos &&
        !percent_decode(std::string(pair.substr(eq + 1)), value, true))
      return false;
    out[key] = value;
  }
  return true;
}

bool parse_request_line(std::string_view line, HttpRequest& out) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) return false;
  out.method = std::string(line.substr(0, sp1));
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return false;
  if (target.empty() || target.front() != '/') return false;
  for (const char c : out.method)
    if (!std::isupper(static_cast<unsigned char>(c))) return false;
  const size_t qm = target.find('?');
  if (!percent_decode(std::string(target.substr(0, qm)), out.path, false)) return false;
  if (out.path.find('\0') != std::string::npos) return false;
  return qm == std::string_view::npos || parse_query(target.substr(qm + 1), out.query);
}

}  // namespace

bool percent_decode(const std::string& in, std::string& out, bool plus_is_space) {
  out.clear();
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = hex_value(in[i + 1]);
      const int lo = hex_value(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return true;
}

bool parse_request_head(const std::string& head, HttpRequest& out) {
  std::string_view rest(head);
  size_t eol = rest.find("\r\n");
  if (eol == std::string_view::npos || !parse_request_line(rest.substr(0, eol), out)) return false;
  rest.remove_prefix(eol + 2);
  while ((eol = rest.find("\r\n")) != std::string_view::npos && eol > 0) {
    const std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    std::string name = common::to_lower_ascii(std::string(line.substr(0, colon)));
    for (const char c : name)
      if (std::isspace(static_cast<unsigned char>(c)) ||
          std::iscntrl(static_cast<unsigned char>(c)))
        return false;
    // A second Host (RFC 9112 3.2: answered 400), Authorization or Content-Length is refused:
    // two proxies in front may read different ones.
    if ((name == "host" || name == "authorization" || name == "content-length") &&
        out.headers.count(name) > 0)
      return false;
    out.headers[name] = common::trim(std::string(line.substr(colon + 1)));
  }
  return true;
}

const char* status_text(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 421:
      return "Misdirected Request";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

}  // namespace autonous::ops
