#include "internal/ops/dashboard_support.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "internal/common/utf8.h"
#include "internal/ops/html.h"

namespace autonous::ops::detail {

double percentile(std::vector<double>& values, double q) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

double num(const nlohmann::json& j, const char* key, double fallback) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string str(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return {};
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  return it->is_string() ? it->get<std::string>()
                         : it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string row_table(const std::string& id, const Rows& row,
                      const std::vector<std::string>& hidden) {
  std::vector<std::vector<std::string>> rows;
  for (int i = 0; i < static_cast<int>(row.columns().size()); ++i) {
    const std::string& name = row.columns()[static_cast<size_t>(i)];
    if (std::find(hidden.begin(), hidden.end(), name) != hidden.end()) continue;
    rows.push_back({html::escape(name), row.is_null(0, i)
                                            ? "<span class='muted'>null</span>"
                                            : "<pre>" + html::escape(row.text(0, i)) + "</pre>"});
  }
  return html::table(id, {"field", "value"}, rows);
}

std::string snippet(const std::string& text, size_t max_chars) {
  const std::string clean = common::sanitize_utf8(text);
  if (common::count_code_points(clean) <= max_chars) return clean;
  return clean.substr(0, common::prefix_bytes(clean, max_chars)) + "…";
}

}  // namespace autonous::ops::detail
