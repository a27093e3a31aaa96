#include "internal/ops/page_db.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

namespace autonous::ops {

int Rows::column(std::string_view name) const {
  for (size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i] == name) return static_cast<int>(i);
  return -1;
}

const std::string& Rows::text(size_t row, int col) const {
  static const std::string kEmpty;
  const Cell& c = cells_.at(row).at(col);
  return c ? *c : kEmpty;
}

double Rows::real(size_t row, int col) const {
  const Cell& c = cells_.at(row).at(col);
  if (!c || c->empty()) return 0;
  char* end = nullptr;
  const double v = std::strtod(c->c_str(), &end);
  return end == c->c_str() || !std::isfinite(v) ? 0 : v;
}

int64_t Rows::int64(size_t row, int col) const {
  const double v = real(row, col);
  if (v >= 9.2e18 || v <= -9.2e18) return 0;
  const Cell& c = cells_.at(row).at(col);
  // Whole numbers exactly (a double holds 2^53 only); fractions truncated.
  if (c && c->find_first_of(".eE") == std::string::npos)
    return std::strtoll(c->c_str(), nullptr, 10);
  return static_cast<int64_t>(v);
}

std::optional<double> unix_seconds(const std::string& iso) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed != 19)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  double fraction = 0;
  const std::string rest = iso.substr(19);
  if (!rest.empty() && rest[0] == '.') {
    char* end = nullptr;
    fraction = std::strtod(("0" + rest).c_str(), &end);
  }
  return static_cast<double>(timegm(&tm)) + fraction;
}

std::string iso_time(double unix_seconds) {
  const auto whole = static_cast<std::time_t>(std::floor(unix_seconds));
  const auto ms = static_cast<int>(std::floor((unix_seconds - static_cast<double>(whole)) * 1000));
  std::tm tm{};
  gmtime_r(&whole, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

}  // namespace autonous::ops
