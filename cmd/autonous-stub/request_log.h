#pragma once
// --log FILE: appends one JSON line per chat request (flushed at once): t_ms, path, query,
// authorization (or null), headers (every header, names lower-cased), fault (the directive that
// fired, or null), body.

#include <fstream>
#include <mutex>
#include <optional>
#include <string>

#include "cmd/autonous-stub/http.h"

namespace autonous::stub {

class RequestLog {
 public:
  // Appends to `path`; logs nothing when it is empty.
  explicit RequestLog(const std::string& path);

  // Logs `req` with `body` (the parsed JSON, or the raw text as a string). Thread-safe.
  void write(const Request& req, const json& body, const std::optional<std::string>& fault);

 private:
  bool enabled_;
  std::mutex mu_;
  std::ofstream out_;
};

}  // namespace autonous::stub
