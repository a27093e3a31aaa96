#include "internal/openai/retry_after.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <ctime>

namespace autonous::openai {
namespace {

// A non-negative number; "inf" and values too large for a double count as the longest wait,
// "nan" is not a number.
std::optional<double> parse_number(const std::string& s) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    if (s[0] == '-') return std::nullopt;
    // Too large for a double is the longest wait; too small to tell from zero is no wait.
    return std::strtod(s.c_str(), nullptr) == HUGE_VAL ? HUGE_VAL : 0.0;
  }
  if (ec != std::errc() || std::isnan(v) || v < 0) return std::nullopt;
  return v;
}

// `ms` as a duration, clamped to kMaxRetryWait before the cast (a double beyond int64's range
// cast to an integer is undefined behaviour).
std::chrono::milliseconds clamped_ms(double ms) {
  const auto cap = static_cast<double>(kMaxRetryWait.count());
  return std::chrono::milliseconds(static_cast<int64_t>(std::min(ms, cap)));
}

// RFC 9110 IMF-fixdate, e.g. "Wed, 21 Oct 2015 07:28:00 GMT", in seconds since the epoch (a
// time_t: a far date such as year 9999 overflows system_clock's nanoseconds).
std::optional<time_t> parse_http_date(const std::string& s) {
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const time_t t = timegm(&tm);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return t;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_retry_after(
    const std::map<std::string, std::string>& headers, std::chrono::system_clock::time_point now) {
  using std::chrono::milliseconds;
  if (auto it = headers.find("retry-after-ms"); it != headers.end()) {
    if (auto v = parse_number(it->second)) return clamped_ms(*v);
  }
  auto it = headers.find("retry-after");
  if (it == headers.end()) return std::nullopt;
  if (auto v = parse_number(it->second)) return clamped_ms(*v * 1000);
  if (auto date = parse_http_date(it->second)) {
    const double seconds = std::difftime(*date, std::chrono::system_clock::to_time_t(now));
    return clamped_ms(std::max(seconds, 0.0) * 1000);
  }
  return std::nullopt;
}

}  // namespace autonous::openai
