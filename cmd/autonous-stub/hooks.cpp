#include "cmd/autonous-stub/hooks.h"

#include <chrono>
#include <thread>

namespace autonous::stub {
namespace {

// The number after `prefix` in the path, or -1.
int number_after(const std::string& path, const std::string& prefix) {
  if (path.rfind(prefix, 0) != 0) return -1;
  try {
    return std::stoi(path.substr(prefix.size()));
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

int Hooks::count(const Request& req) {
  const auto key = req.headers.find("idempotency-key");
  const std::lock_guard lock(mu_);
  return ++counts_[req.path + "#" + (key == req.headers.end() ? "" : key->second)];
}

bool Hooks::serve(int fd, const Request& req) {
  const std::string& p = req.path;
  const std::string ok = R"({"received":true})";
  if (p == "/hook/ok") return send_all(fd, response(200, ok));
  if (p == "/hook/big")
    return send_all(fd, response(200, std::string(200000, 'x'), {}, "text/plain"));
  if (const int n = number_after(p, "/hook/fail/"); n >= 0) {
    if (count(req) <= n) return send_all(fd, response(500, R"({"error":"receiver failed"})"));
    return send_all(fd, response(200, ok));
  }
  if (const int n = number_after(p, "/hook/close/"); n >= 0) {
    if (count(req) <= n) return false;
    return send_all(fd, response(200, ok));
  }
  if (const int ms = number_after(p, "/hook/slow/"); ms >= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return send_all(fd, response(200, ok));
  }
  if (const int code = number_after(p, "/hook/status/"); code >= 100 && code <= 599) {
    Headers extra;
    if (code == 429 || code == 503) extra["Retry-After"] = "1";
    return send_all(fd, response(code, R"({"status":)" + std::to_string(code) + "}", extra));
  }
  return send_all(fd, response(404, R"({"error":"no such hook"})"));
}

}  // namespace autonous::stub
