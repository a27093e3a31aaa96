#pragma once
// OpsServer: the operator surface on one address (HTTP_LISTEN in `autonous worker`, --listen in
// `autonous dashboard`): GET /healthz, /metrics and the dashboard's pages (dashboard.h), all
// read-only. With a token, every path but /healthz needs `Authorization: Bearer TOKEN` (or HTTP
// Basic with the token as the password, so a browser can log in); without one, requests must
// name a loopback host (no DNS rebinding). Each server thread opens its own database connection.

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "internal/config/listen_address.h"
#include "internal/engine/context_settings.h"
#include "internal/ops/http_server.h"
#include "internal/ops/metrics.h"
#include "internal/ops/page_db.h"
#include "internal/ops/task_counts.h"

namespace autonous::ops {

struct OpsOptions {
  config::ListenAddress listen;
  std::string token;  // empty: no authentication (loopback only; config refuses otherwise)
  // Opens a connection for one server thread (SQLite: with a short busy timeout, /healthz
  // waits on it).
  std::function<std::unique_ptr<PageDb>()> open_db;
  engine::ContextSettings settings;  // the environment's, for the chat page's thresholds
  Metrics* metrics = nullptr;        // required; must outlive the server
  LoopProbe loop;                    // empty without a worker
  bool need_write = true;            // /healthz: the database must take a write lock
  std::chrono::milliseconds stall_limit{60000};
  // A page's queries are interrupted past this (503, saying so): no request holds a thread long.
  std::chrono::milliseconds request_deadline{10000};
  HttpLimits limits;
};

class OpsServer {
 public:
  // Binds and serves. Throws std::runtime_error when the address cannot be bound.
  explicit OpsServer(OpsOptions options);
  ~OpsServer();
  int port() const noexcept;

 private:
  HttpResponse handle(PageDb& db, const HttpRequest& request) const;
  std::string database_problem(PageDb& db) const;
  bool authorized(const HttpRequest& request) const;

  OpsOptions options_;
  mutable TaskCounts counts_;
  mutable std::mutex probe_mu_;
  mutable std::string probe_result_;
  mutable std::chrono::steady_clock::time_point probe_fresh_until_{};
  std::unique_ptr<HttpServer> http_;
};

// Decodes standard base64; false on bad input.
bool base64_decode(const std::string& in, std::string& out);

}  // namespace autonous::ops
