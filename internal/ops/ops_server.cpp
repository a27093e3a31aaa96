#include "internal/ops/ops_server.h"

#include <charconv>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "internal/common/utf8.h"
#include "internal/ops/dashboard.h"
#include "internal/ops/health.h"
#include "internal/ops/html.h"

namespace autonous::ops {
namespace {

constexpr const char* kHtml = "text/html; charset=utf-8";
constexpr std::chrono::milliseconds kProbeReuse{250};
// No script may run on a page, whatever a message contains; styles are inline.
constexpr const char* kPolicy =
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'";

// Compares without leaking where the first difference is.
bool same(const std::string& given, const std::string& token) {
  if (given.size() != token.size() || token.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < token.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ token[i]);
  return diff == 0;
}

HttpResponse page(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = kHtml;
  r.body = std::move(body);
  r.headers = {{"Content-Security-Policy", kPolicy},
               {"Referrer-Policy", "no-referrer"},
               {"X-Frame-Options", "DENY"}};
  return r;
}

// 503 saying why: JSON for /healthz (a probe reads it), text otherwise.
HttpResponse unavailable(const HttpRequest& request, const std::string& why) {
  if (request.path != "/healthz")
    return HttpResponse{503, "text/plain; charset=utf-8", why + "\n", {}};
  const nlohmann::json body = {{"status", "unhealthy"}, {"reason", why}};
  return HttpResponse{503,
                      "application/json",
                      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                      {}};
}

HttpResponse not_found(const std::string& what) {
  return page(404, html::page("Not found", "<p>" + html::escape(what) + "</p>"));
}

// A query parameter as UTF-8, invalid bytes replaced: PostgreSQL refuses them as a parameter
// (on SQLite a chat id stored with such bytes is then not found; its pages' links repair it
// the same way, html::escape).
std::string query(const HttpRequest& r, const char* key) {
  const auto it = r.query.find(key);
  return it == r.query.end() ? std::string() : common::sanitize_utf8(it->second);
}

// True when `host` (a Host header) names this machine's loopback: the only names a browser
// uses for a loopback server, unless a page rebinds its own name to 127.0.0.1.
bool loopback_host(const std::string& host) {
  std::string name = host;
  if (!name.empty() && name.front() == '[') {
    name = name.substr(1, name.find(']') == std::string::npos ? 0 : name.find(']') - 1);
  } else if (const size_t colon = name.rfind(':'); colon != std::string::npos) {
    name = name.substr(0, colon);
  }
  try {
    return config::parse_listen_address(name.find(':') != std::string::npos ? "[" + name + "]:1"
                                                                            : name + ":1")
        .loopback;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

}  // namespace

bool base64_decode(const std::string& in, std::string& out) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  out.clear();
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (const char c : in) {
    if (c == '=') {
      ++pad;
      continue;
    }
    const size_t v = kAlphabet.find(c);
    if (v == std::string_view::npos || pad > 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return pad <= 2;
}

OpsServer::OpsServer(OpsOptions options) : options_(std::move(options)) {
  // Each server thread opens its connection on its first request, and again after a failure.
  auto make_handler = [this]() -> HttpHandler {
    auto db = std::make_shared<std::unique_ptr<PageDb>>();
    return [this, db](const HttpRequest& request) {
      if (!*db) {
        try {
          *db = options_.open_db();
        } catch (const std::exception& e) {
          return unavailable(request, std::string("database cannot be opened: ") + e.what());
        }
      }
      try {
        (*db)->begin_request(std::chrono::steady_clock::now() + options_.request_deadline);
        HttpResponse r = handle(**db, request);
        (*db)->end_request();
        if (r.status == 200 && r.content_type == kHtml)  // every page may reload itself
          r.body = html::with_refresh(std::move(r.body), request.path, request.query);
        return r;
      } catch (const DeadlinePassed&) {
        (*db)->end_request();
        return unavailable(request, "the page took longer than its deadline; try again later");
      } catch (const std::exception& e) {
        db->reset();  // a connection that failed is not kept
        // A probe reads JSON and a status: a server that went down mid-request is a 503 too.
        if (request.path == "/healthz")
          return unavailable(request, std::string("database error: ") + e.what());
        throw;
      }
    };
  };
  http_ = std::make_unique<HttpServer>(options_.listen, make_handler, options_.limits);
}

OpsServer::~OpsServer() = default;

int OpsServer::port() const noexcept { return http_->port(); }

// One probe every kProbeReuse at most, shared by every caller: a flood of /healthz requests
// (they need no token) cannot keep taking the worker's write lock, and a database that went
// down shows within a quarter second.
std::string OpsServer::database_problem(PageDb& db) const {
  const std::lock_guard lock(probe_mu_);
  if (std::chrono::steady_clock::now() < probe_fresh_until_) return probe_result_;
  const bool starting = options_.loop && options_.loop().starting;  // catch-up holds the lock
  probe_result_ = db.probe(options_.need_write && !starting);
  probe_fresh_until_ = std::chrono::steady_clock::now() + kProbeReuse;
  return probe_result_;
}

bool OpsServer::authorized(const HttpRequest& request) const {
  if (options_.token.empty()) return true;
  const auto it = request.headers.find("authorization");
  if (it == request.headers.end()) return false;
  const std::string& value = it->second;
  if (value.rfind("Bearer ", 0) == 0) return same(value.substr(7), options_.token);
  std::string decoded;
  if (value.rfind("Basic ", 0) == 0 && base64_decode(value.substr(6), decoded)) {
    const size_t colon = decoded.find(':');
    return colon != std::string::npos && same(decoded.substr(colon + 1), options_.token);
  }
  return false;
}

HttpResponse OpsServer::handle(PageDb& db, const HttpRequest& request) const {
  const std::string& path = request.path;
  if (path == "/healthz") {
    const HealthReport h = check_health(database_problem(db), options_.loop,
                                        HealthOptions{options_.need_write, options_.stall_limit});
    return HttpResponse{h.ok ? 200 : 503, "application/json", h.body, {}};
  }
  const auto host = request.headers.find("host");
  if (options_.token.empty() && (host == request.headers.end() || !loopback_host(host->second))) {
    // Without a token only a loopback name may ask: a web page that rebinds its own name to
    // 127.0.0.1 must not read the chats through the operator's browser.
    return HttpResponse{421,
                        "text/plain; charset=utf-8",
                        "this server answers loopback names only (localhost, 127.0.0.1, [::1]); "
                        "set HTTP_TOKEN to serve others\n",
                        {}};
  }
  if (!authorized(request)) {
    HttpResponse r{401, "text/plain; charset=utf-8", "a bearer token is required\n", {}};
    r.headers.emplace_back("WWW-Authenticate", "Basic realm=\"autonous\", charset=\"UTF-8\"");
    return r;
  }
  if (path == "/metrics")
    return HttpResponse{
        200, kMetricsContentType, options_.metrics->render(db, counts_, options_.loop), {}};
  if (path == "/") return page(200, overview_page(db, counts_));
  if (path == "/chats") return page(200, chats_page(db, query(request, "id")));
  if (path == "/chat") {
    const std::string id = query(request, "id");
    if (id.empty()) return page(200, chats_page(db, ""));
    TranscriptView view;
    view.search = query(request, "q");
    const std::string before = query(request, "before");  // a history id; anything else: 0
    const auto [end, bad] =
        std::from_chars(before.data(), before.data() + before.size(), view.before);
    if (bad != std::errc() || end != before.data() + before.size() || view.before < 0)
      view.before = 0;
    auto body = chat_page(db, id, options_.settings, view);
    return body ? page(200, std::move(*body)) : not_found("No chat " + id + " is stored.");
  }
  if (path == "/task") {
    const std::string id = query(request, "id");
    int64_t task = 0;
    const auto [ptr, ec] = std::from_chars(id.data(), id.data() + id.size(), task);
    if (id.empty() || ec != std::errc() || ptr != id.data() + id.size())
      return not_found("A task id is a number; got '" + id + "'.");
    auto body = task_page(db, task);
    return body ? page(200, std::move(*body)) : not_found("No task " + id + ".");
  }
  return not_found("No page " + path + ".");
}

}  // namespace autonous::ops
