#pragma once
// exec_prepared_until: a prepared statement under a client-side deadline. Recall's reads must end
// by RECALL_TIMEOUT_MS; a SET / RESET statement_timeout around them cost two round trips each
// (four a turn, #30). Here the statement is sent, its answer awaited on the socket until the
// deadline, and past it the server is asked to cancel it (PQcancel, a connection of its own):
// the statement then ends with the server's 57014, or with its own result if it ended first, and
// the connection is ready for the next statement. A server that answers neither within 2 s more
// loses the connection (its socket shut: broken(), as after a restart). libpq 15's PQcancel
// connects without a timeout: to a host that vanished it may block until TCP gives up.

#include <chrono>
#include <vector>

struct pg_conn;
struct pg_result;

namespace autonous::db::pg {

// The statement's last result, as PQexecPrepared returns it (an error result when the
// connection broke), or nullptr when it could not be sent (PQerrorMessage says why).
// `*cancelled` is set when the deadline passed and a cancel was sent.
pg_result* exec_prepared_until(pg_conn* c, const char* name, const std::vector<const char*>& values,
                               std::chrono::steady_clock::time_point deadline, bool* cancelled);

}  // namespace autonous::db::pg
