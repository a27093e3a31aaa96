#include "internal/common/clock.h"

#include <ctime>

namespace autonous::common {

int64_t to_unix_ms(TimePoint t) noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

TimePoint from_unix_ms(int64_t ms) noexcept {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::milliseconds(ms)));
}

std::optional<TimePoint> parse_utc(std::string_view iso) noexcept {
  // YYYY-MM-DDTHH:MM:SS, each a fixed run of digits.
  if (iso.size() < 19) return std::nullopt;
  auto digits = [&](size_t at, size_t n, int& out) {
    out = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (iso[i] < '0' || iso[i] > '9') return false;
      out = out * 10 + (iso[i] - '0');
    }
    return true;
  };
  std::tm tm{};
  if (!digits(0, 4, tm.tm_year) || iso[4] != '-' || !digits(5, 2, tm.tm_mon) || iso[7] != '-' ||
      !digits(8, 2, tm.tm_mday) || (iso[10] != 'T' && iso[10] != ' ') ||
      !digits(11, 2, tm.tm_hour) || iso[13] != ':' || !digits(14, 2, tm.tm_min) || iso[16] != ':' ||
      !digits(17, 2, tm.tm_sec))
    return std::nullopt;
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 59)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  int64_t ms = 0;
  size_t i = 19;
  if (i < iso.size() && iso[i] == '.') {
    if (i + 1 == iso.size() || iso[i + 1] < '0' || iso[i + 1] > '9') return std::nullopt;
    int64_t scale = 100;
    for (++i; i < iso.size() && iso[i] >= '0' && iso[i] <= '9'; ++i, scale /= 10)
      ms += (iso[i] - '0') * scale;
  }
  if (i < iso.size() && iso[i] == 'Z') ++i;
  if (i != iso.size()) return std::nullopt;
  const std::tm asked = tm;
  const std::time_t t = timegm(&tm);  // normalises: 02-31 would become 03-03
  if (tm.tm_mday != asked.tm_mday || tm.tm_mon != asked.tm_mon) return std::nullopt;
  return from_unix_ms(static_cast<int64_t>(t) * 1000 + ms);
}

}  // namespace autonous::common
