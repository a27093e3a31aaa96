#pragma once
// A reply webhook's receiver in the stub (#32): POST /hook/... answers as the path says, so the
// worker's delivery meets a receiver that is well, failing, slow or rude. Every request is
// logged (--log) with its headers and its raw body as a JSON string (a signature covers the bytes).
// - /hook/ok: 200; /hook/big: 200 with a 200 kB body (a receiver that echoes);
// - /hook/fail/N: 500 for the first N requests (counted per task, by its Idempotency-Key),
//   then 200;
// - /hook/close/N: the first N requests per task get the connection closed without an answer;
// - /hook/slow/MS: 200 after MS milliseconds;
// - /hook/status/CODE: always CODE (a 429 or 503 carries Retry-After: 1).

#include <map>
#include <mutex>
#include <string>

#include "cmd/autonous-stub/http.h"

namespace autonous::stub {

class Hooks {
 public:
  static bool is_hook_path(const Request& req) { return req.path.rfind("/hook/", 0) == 0; }
  // Answers `req`; false when the connection is to close.
  bool serve(int fd, const Request& req);

 private:
  // The requests seen so far for this path and task, counting this one.
  int count(const Request& req);
  std::mutex mu_;
  std::map<std::string, int> counts_;
};

}  // namespace autonous::stub
