#pragma once
// Html: the dashboard's building blocks. Every piece of data passes through escape() (chat text,
// errors, ids, JSON) before it reaches a page; pages carry no script at all and are served with
// a Content-Security-Policy that forbids one. Plots are inline SVG drawn here.

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autonous::ops::html {

// & < > " ' as entities; invalid UTF-8 replaced. Safe in element text and quoted attributes.
std::string escape(std::string_view text);

// An escaped href to a dashboard page with one query parameter: "/chat?id=a%20b".
std::string link(std::string_view path, std::string_view key, std::string_view value,
                 std::string_view label);

// A whole page: head (title, style), navigation, `body` (already HTML), generation time.
std::string page(std::string_view title, const std::string& body);

// `value` percent-encoded for a URL's query (RFC 3986's unreserved characters kept).
std::string url_encode(std::string_view value);
// An escaped href: `path` with `query` (values percent-encoded), for an attribute.
std::string href(std::string_view path, const std::map<std::string, std::string>& query);

// `page` (from page()) reloading itself every `?refresh=` seconds (5 to 3600; no script: a
// <meta http-equiv='refresh'>), with a link in its header that turns that on (30 s) or off on
// the same page (`path`, `query`: the request's).
std::string with_refresh(std::string page, std::string_view path,
                         std::map<std::string, std::string> query);

// A table; `cells` are HTML already (escape text first). `id` names it for tests and CSS.
std::string table(std::string_view id, const std::vector<std::string>& headers,
                  const std::vector<std::vector<std::string>>& rows);

struct Series {
  std::string name;
  std::string color;  // CSS color
  std::vector<std::pair<double, double>> points;
  bool dashed = false;
  bool step = false;  // drawn as a step line (a budget that changes at a turn)
};

struct Marker {  // a dot on the plot, with a tooltip
  double x = 0;
  double y = 0;
  std::string color;
  std::string label;
  char shape = 'o';  // 'o' circle, 's' square, '^' triangle
};

struct Chart {
  std::string id;
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<Series> series;
  std::vector<Marker> markers;
  double y_min = 0;
};

// An inline SVG line chart with axes, ticks and a legend. Empty data draws a note instead.
std::string line_chart(const Chart& chart);

// A number with thousands separators ("12 345"); a share as "81.5 %".
std::string number(double value);
std::string percent(double share);
// US dollars: 4 decimals under $1 (a turn costs fractions of a cent), else 2; "-" when unknown.
std::string usd(double dollars);

}  // namespace autonous::ops::html
