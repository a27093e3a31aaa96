#include "internal/backend/postgres/timed_exec.h"

#include <poll.h>

#include <array>
#include <cerrno>

#include <libpq-fe.h>

namespace autonous::db::pg {
namespace {

// Asks the server to cancel what `c` runs. A cancel that arrives after the statement ended does
// nothing (the server ignores one while the session waits for a command).
void cancel(pg_conn* c) {
  PGcancel* request = PQgetCancel(c);
  if (request == nullptr) return;
  std::array<char, 256> error{};
  PQcancel(request, error.data(), static_cast<int>(error.size()));
  PQfreeCancel(request);
}

}  // namespace

pg_result* exec_prepared_until(pg_conn* c, const char* name, const std::vector<const char*>& values,
                               std::chrono::steady_clock::time_point deadline, bool* cancelled) {
  *cancelled = false;
  if (PQsendQueryPrepared(c, name, static_cast<int>(values.size()), values.data(), nullptr,
                          nullptr, 0) == 0)
    return nullptr;
  while (PQconsumeInput(c) != 0 && PQisBusy(c) != 0) {
    int wait_ms = 1000;  // after the cancel: until the server answers it
    if (!*cancelled) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        cancel(c);
        *cancelled = true;
        continue;
      }
      wait_ms = static_cast<int>(std::min<int64_t>(left.count(), 1000));
    }
    pollfd p{PQsocket(c), POLLIN, 0};
    if (poll(&p, 1, wait_ms) < 0 && errno != EINTR) break;  // PQgetResult reports the state
  }
  pg_result* last = nullptr;  // as PQexecPrepared: the last result; a broken connection's error
  while (pg_result* r = PQgetResult(c)) {
    if (last != nullptr) PQclear(last);
    last = r;
  }
  return last;
}

}  // namespace autonous::db::pg
