#include "internal/ops/dashboard_support.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

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

bool chat_call(const nlohmann::json& payload) {
  if (!payload.is_object()) return false;
  const auto call = payload.find("call");
  return call == payload.end() || (call->is_string() && call->get<std::string>() == "chat");
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
  // Columns the queue keeps in Unix ms: shown as the stored ISO times are, the number in a tip.
  static const std::vector<std::string> kUnixMs = {"run_after",        "lease_expires_at",
                                                   "first_claimed_at", "webhook_until",
                                                   "next_at",          "lease_until"};
  std::vector<std::vector<std::string>> rows;
  for (int i = 0; i < static_cast<int>(row.columns().size()); ++i) {
    const std::string& name = row.columns()[static_cast<size_t>(i)];
    if (std::find(hidden.begin(), hidden.end(), name) != hidden.end()) continue;
    std::string value;
    if (row.is_null(0, i)) {
      value = "<span class='muted'>null</span>";
    } else if (std::find(kUnixMs.begin(), kUnixMs.end(), name) != kUnixMs.end() &&
               row.int64(0, i) > 0) {
      value = fmt::format("<pre title='Unix ms {}'>{}</pre>", row.int64(0, i),
                          iso_time(static_cast<double>(row.int64(0, i)) / 1000.0));
    } else {
      value = bounded_pre("", row.text(0, i));
    }
    rows.push_back({html::escape(name), value});
  }
  return html::table(id, {"field", "value"}, rows);
}

namespace {

// The first `max_chars` code points of `text` (any bytes), cleaned to UTF-8; `cut` says whether
// anything was left out. A code point is at most 4 bytes (an invalid byte becomes one U+FFFD):
// only the head of a huge text is cleaned and counted.
std::string head_of(const std::string& text, size_t max_chars, bool& cut) {
  const size_t head = max_chars > (SIZE_MAX - 8) / 4 ? text.size() : max_chars * 4 + 4;
  const std::string clean = common::sanitize_utf8(std::string_view(text).substr(0, head));
  const size_t keep = common::prefix_bytes(clean, max_chars);
  cut = keep < clean.size() || text.size() > head;
  return cut ? clean.substr(0, keep) : clean;
}

// Code points of `text` as shown (an invalid byte is one U+FFFD); copies only invalid text.
size_t code_points_of(const std::string& text) {
  if (!common::is_valid_utf8(text)) return common::count_code_points(common::sanitize_utf8(text));
  size_t n = 0;  // the bytes that do not continue a code point
  for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

std::string snippet(const std::string& text, size_t max_chars) {
  bool cut = false;
  std::string out = head_of(text, max_chars, cut);
  return cut ? out + "…" : out;
}

std::string bounded_pre(const std::string& id, const std::string& text, size_t max_chars) {
  bool cut = false;
  const std::string shown = head_of(text, max_chars, cut);
  std::string out = (id.empty() ? std::string("<pre>") : "<pre id='" + html::escape(id) + "'>") +
                    html::escape(shown) + (cut ? "…" : "") + "</pre>";
  if (cut)
    out += "<p class='muted'>The first " + std::to_string(max_chars) + " of " +
           std::to_string(code_points_of(text)) + " characters are shown.</p>";
  return out;
}

}  // namespace autonous::ops::detail
