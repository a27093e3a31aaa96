#include "cmd/autonous-stub/request_log.h"

namespace autonous::stub {

RequestLog::RequestLog(const std::string& path) : enabled_(!path.empty()) {
  if (enabled_) out_.open(path, std::ios::app);
}

void RequestLog::write(const Request& req, const json& body,
                       const std::optional<std::string>& fault) {
  if (!enabled_) return;
  const auto auth = req.headers.find("authorization");
  const json line = {
      {"t_ms",
       std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
           .count()},
      {"path", req.path},
      {"query", req.query},
      {"authorization", auth != req.headers.end() ? json(auth->second) : json(nullptr)},
      {"headers", json(req.headers)},
      {"fault", fault ? json(*fault) : json(nullptr)},
      {"body", body}};
  const std::lock_guard lock(mu_);
  out_ << line.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  out_.flush();
}

}  // namespace autonous::stub
