#include "internal/openai/retry_after.h"

#include <charconv>
#include <ctime>

namespace autonous::openai {
namespace {

std::optional<double> parse_number(const std::string& s) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// RFC 9110 IMF-fixdate, e.g. "Wed, 21 Oct 2015 07:28:00 GMT".
std::optional<std::chrono::system_clock::time_point> parse_http_date(const std::string& s) {
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const time_t t = timegm(&tm);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return std::chrono::system_clock::from_time_t(t);
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_retry_after(
    const std::map<std::string, std::string>& headers, std::chrono::system_clock::time_point now) {
  using std::chrono::milliseconds;
  if (auto it = headers.find("retry-after-ms"); it != headers.end()) {
    if (auto v = parse_number(it->second)) return milliseconds(static_cast<int64_t>(*v));
  }
  auto it = headers.find("retry-after");
  if (it == headers.end()) return std::nullopt;
  if (auto v = parse_number(it->second)) return milliseconds(static_cast<int64_t>(*v * 1000));
  if (auto date = parse_http_date(it->second)) {
    const auto wait = std::chrono::duration_cast<milliseconds>(*date - now);
    return wait.count() > 0 ? wait : milliseconds(0);
  }
  return std::nullopt;
}

}  // namespace autonous::openai
