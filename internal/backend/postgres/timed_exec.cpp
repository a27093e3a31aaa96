#include "internal/backend/postgres/timed_exec.h"

#include <algorithm>
#include <array>
#include <cerrno>

#include <libpq-fe.h>
#include <poll.h>
#include <sys/socket.h>

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

// A server that answers neither the statement nor its cancel within this (a dead host, a pooler
// that drops cancels) loses the connection: the statement fails as on a broken one.
constexpr std::chrono::seconds kCancelGrace{2};

// Shuts the connection's socket: libpq then sees it closed (PQstatus CONNECTION_BAD) and the
// caller's broken() / reconnect() take over, as after a server restart.
void abandon(pg_conn* c) {
  const int fd = PQsocket(c);
  if (fd >= 0) shutdown(fd, SHUT_RDWR);
}

}  // namespace

pg_result* exec_prepared_until(pg_conn* c, const char* name, const std::vector<const char*>& values,
                               std::chrono::steady_clock::time_point deadline, bool* cancelled) {
  *cancelled = false;
  if (PQsendQueryPrepared(c, name, static_cast<int>(values.size()), values.data(), nullptr, nullptr,
                          0) == 0)
    return nullptr;
  auto until = deadline;
  while (PQconsumeInput(c) != 0 && PQisBusy(c) != 0) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      if (*cancelled) {  // no answer to the cancel either: the connection is given up
        abandon(c);
        break;
      }
      cancel(c);
      *cancelled = true;
      until = std::chrono::steady_clock::now() + kCancelGrace;
      continue;
    }
    pollfd p{PQsocket(c), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000))) < 0 &&
        errno != EINTR) {
      abandon(c);
      break;
    }
  }
  pg_result* last = nullptr;  // as PQexecPrepared: the last result; a broken connection's error
  while (pg_result* r = PQgetResult(c)) {
    if (last != nullptr) PQclear(last);
    last = r;
  }
  return last;
}

}  // namespace autonous::db::pg
