#include "internal/ops/html.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "internal/common/utf8.h"

namespace autonous::ops::html {
namespace {

constexpr double kWidth = 960;
constexpr double kHeight = 300;
constexpr double kLeft = 70;
constexpr double kRight = 20;
constexpr double kTop = 30;
constexpr double kBottom = 40;

constexpr const char* kStyle =
    "body{font:14px system-ui,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}"
    "header{background:#1d2430;color:#fff;padding:10px 24px}header a{color:#cfe0ff;margin-right:"
    "18px;text-decoration:none}main{padding:12px 24px;max-width:1200px}h1{font-size:20px}"
    "h2{font-size:16px;margin-top:28px}table{border-collapse:collapse;background:#fff;"
    "margin:6px 0}td,th{border:1px solid #dde1e6;padding:4px 8px;text-align:left;"
    "vertical-align:top}th{background:#eef1f5}td.num{text-align:right;font-variant-numeric:"
    "tabular-nums}pre{white-space:pre-wrap;word-break:break-word;margin:0;max-width:900px}"
    "svg{background:#fff;border:1px solid #dde1e6}.cards{display:flex;gap:12px;flex-wrap:wrap}"
    ".card{background:#fff;border:1px solid #dde1e6;padding:8px 14px;min-width:110px}"
    ".card "
    "b{display:block;font-size:22px}.bad{color:#b42318}.muted{color:#667085}.why{display:inline-"
    "block;min-width:22em}"
    "footer{color:#667085;padding:12px 24px;font-size:12px}";

struct Scale {
  double x0, x1, y0, y1;
  double px(double x) const {
    return kLeft + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * (kWidth - kLeft - kRight);
  }
  double py(double y) const {
    return kHeight - kBottom - (y1 > y0 ? (y - y0) / (y1 - y0) : 0) * (kHeight - kTop - kBottom);
  }
};

Scale scale_of(const Chart& c) {
  Scale s{INFINITY, -INFINITY, c.y_min, c.y_min};
  auto see = [&s](double x, double y) {
    s.x0 = std::min(s.x0, x);
    s.x1 = std::max(s.x1, x);
    s.y1 = std::max(s.y1, y);
  };
  for (const Series& series : c.series)
    for (const auto& [x, y] : series.points) see(x, y);
  for (const Marker& m : c.markers) see(m.x, m.y);
  s.y1 = s.y1 > s.y0 ? s.y1 * 1.08 : s.y0 + 1;
  return s;
}

std::string axes(const Chart& c, const Scale& s) {
  std::string out = fmt::format(
      "<line x1='{0}' y1='{1}' x2='{2}' y2='{1}' stroke='#98a2b3'/>"
      "<line x1='{0}' y1='{3}' x2='{0}' y2='{1}' stroke='#98a2b3'/>",
      kLeft, kHeight - kBottom, kWidth - kRight, kTop);
  for (int i = 0; i <= 4; ++i) {
    const double y = s.y0 + (s.y1 - s.y0) * i / 4;
    const double x = s.x0 + (s.x1 - s.x0) * i / 4;
    out += fmt::format(
        "<text x='{}' y='{:.1f}' font-size='11' text-anchor='end' fill='#667085'>{}</text>"
        "<line x1='{}' y1='{:.1f}' x2='{}' y2='{:.1f}' stroke='#eef1f5'/>",
        kLeft - 6, s.py(y) + 4, number(y), kLeft, s.py(y), kWidth - kRight, s.py(y));
    out += fmt::format(
        "<text x='{:.1f}' y='{}' font-size='11' text-anchor='middle' fill='#667085'>{}</text>",
        s.px(x), kHeight - kBottom + 16, number(x));
  }
  out += fmt::format(
      "<text x='{}' y='{}' font-size='12' text-anchor='middle' fill='#344054'>{}</text>"
      "<text x='14' y='{}' font-size='12' fill='#344054' transform='rotate(-90 14 {})' "
      "text-anchor='middle'>{}</text>",
      (kLeft + kWidth) / 2, kHeight - 6, escape(c.x_label), kHeight / 2, kHeight / 2,
      escape(c.y_label));
  return out;
}

std::string polyline(const Series& series, const Scale& s) {
  std::string pts;
  double last_y = 0;
  bool first = true;
  for (const auto& [x, y] : series.points) {
    if (series.step && !first) pts += fmt::format("{:.1f},{:.1f} ", s.px(x), s.py(last_y));
    pts += fmt::format("{:.1f},{:.1f} ", s.px(x), s.py(y));
    last_y = y;
    first = false;
  }
  return fmt::format(
      "<polyline class='series' data-name='{}' fill='none' stroke='{}' stroke-width='2'{} "
      "points='{}'/>",
      escape(series.name), escape(series.color), series.dashed ? " stroke-dasharray='6 4'" : "",
      pts);
}

std::string marker(const Marker& m, const Scale& s) {
  const double x = s.px(m.x);
  const double y = s.py(m.y);
  std::string shape;
  if (m.shape == 's')
    shape = fmt::format("<rect x='{:.1f}' y='{:.1f}' width='9' height='9'", x - 4.5, y - 4.5);
  else if (m.shape == '^')
    shape = fmt::format("<polygon points='{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}'", x, y - 6,
                        x - 5, y + 4, x + 5, y + 4);
  else
    shape = fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='4'", x, y);
  return fmt::format("<g class='marker'>{} fill='{}'/><title>{}</title></g>", shape,
                     escape(m.color), escape(m.label));
}

}  // namespace

std::string escape(std::string_view text) {
  const std::string clean = common::sanitize_utf8(std::string(text));
  std::string out;
  out.reserve(clean.size() + clean.size() / 8);
  for (const char c : clean) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string url_encode(std::string_view value) {
  std::string encoded;
  for (const unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      encoded += static_cast<char>(c);
    else
      encoded += fmt::format("%{:02X}", c);
  }
  return encoded;
}

std::string href(std::string_view path, const std::map<std::string, std::string>& query) {
  std::string out(path);
  char sep = '?';
  for (const auto& [k, v] : query) {
    out += sep + url_encode(k) + '=' + url_encode(v);
    sep = '&';
  }
  return escape(out);
}

std::string with_refresh(std::string page, std::string_view path,
                         std::map<std::string, std::string> query) {
  int seconds = 0;
  if (const auto it = query.find("refresh"); it != query.end()) {
    const auto [ptr, ec] =
        std::from_chars(it->second.data(), it->second.data() + it->second.size(), seconds);
    if (ec != std::errc() || ptr != it->second.data() + it->second.size()) seconds = 0;
    seconds = seconds <= 0 ? 0 : std::clamp(seconds, 5, 3600);
    query.erase(it);
  }
  const std::string off = href(path, query);
  query["refresh"] = "30";
  const std::string toggle =
      seconds > 0
          ? fmt::format("<a id='refresh' href='{}'>Stop refreshing (every {} s)</a>", off, seconds)
          : fmt::format("<a id='refresh' href='{}'>Refresh every 30 s</a>", href(path, query));
  if (const size_t at = page.find("</header>"); at != std::string::npos) page.insert(at, toggle);
  if (seconds > 0) {
    if (const size_t at = page.find("</head>"); at != std::string::npos)
      page.insert(at, fmt::format("<meta http-equiv='refresh' content='{}'>", seconds));
  }
  return page;
}

std::string link(std::string_view path, std::string_view key, std::string_view value,
                 std::string_view label) {
  return fmt::format("<a href='{}?{}={}'>{}</a>", escape(path), escape(key), url_encode(value),
                     escape(label));
}

std::string page(std::string_view title, const std::string& body) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  return fmt::format(
      "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{} · autonous</title>"
      "<meta name='viewport' content='width=device-width'><style>{}</style></head><body>"
      "<header><a href='/'>autonous</a><a href='/'>Overview</a><a href='/chats'>Chats</a>"
      "<a href='/metrics'>Metrics</a><a href='/healthz'>Health</a></header><main><h1>{}</h1>{}"
      "</main><footer>Read-only. Generated {}.</footer></body></html>",
      escape(title), kStyle, escape(title), body, stamp);
}

std::string table(std::string_view id, const std::vector<std::string>& headers,
                  const std::vector<std::vector<std::string>>& rows) {
  std::string out = fmt::format("<table id='{}'><thead><tr>", escape(id));
  for (const std::string& h : headers) out += "<th>" + escape(h) + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const std::string& cell : row) out += "<td>" + cell + "</td>";
    out += "</tr>";
  }
  if (rows.empty())
    out += fmt::format("<tr><td colspan='{}' class='muted'>none</td></tr>", headers.size());
  return out + "</tbody></table>";
}

std::string line_chart(const Chart& c) {
  bool any = !c.markers.empty();
  for (const Series& s : c.series) any = any || !s.points.empty();
  if (!any) return "<p class='muted'>No data yet.</p>";
  const Scale s = scale_of(c);
  std::string out = fmt::format(
      "<svg id='{}' role='img' aria-label='{}' width='{}' height='{}' viewBox='0 0 {} {}' "
      "xmlns='http://www.w3.org/2000/svg'><text x='{}' y='18' font-size='13' "
      "font-weight='600'>{}</text>",
      escape(c.id), escape(c.title), kWidth, kHeight, kWidth, kHeight, kLeft, escape(c.title));
  out += axes(c, s);
  for (const Series& series : c.series) {
    if (series.points.empty()) continue;
    out += polyline(series, s);
    if (series.points.size() <= 2)  // a line of one point draws nothing: show the points
      for (const auto& [x, y] : series.points)
        out += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='3' fill='{}'/>", s.px(x), s.py(y),
                           escape(series.color));
  }
  for (const Marker& m : c.markers) out += marker(m, s);
  double lx = kWidth - kRight - 10;
  for (auto it = c.series.rbegin(); it != c.series.rend(); ++it) {
    lx -= 12 + 7.0 * static_cast<double>(it->name.size()) + 18;
    out += fmt::format(
        "<rect x='{:.1f}' y='9' width='12' height='3' fill='{}'/><text x='{:.1f}' y='15' "
        "font-size='11'>{}</text>",
        lx, escape(it->color), lx + 16, escape(it->name));
  }
  return out + "</svg>";
}

std::string number(double value) {
  if (!std::isfinite(value)) return "-";
  if (std::fabs(value) < 10 && std::fabs(value - std::round(value)) > 1e-9)
    return fmt::format("{:.2f}", value);
  const auto n = static_cast<long long>(std::llround(value));
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ' ';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string usd(double dollars) {
  if (!std::isfinite(dollars)) return "-";
  return fmt::format(std::fabs(dollars) < 1 ? "${:.4f}" : "${:.2f}", dollars);
}

std::string percent(double share) {
  return std::isfinite(share) ? fmt::format("{:.1f} %", share * 100) : "-";
}

}  // namespace autonous::ops::html
