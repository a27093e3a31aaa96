#pragma once
// One in-process mutex that every write transaction takes first. Threads of one process then
// queue here, in order, instead of sleeping in SQLite's busy handler; only processes compete
// for the file lock. Hold it for the transaction only, never across I/O other than SQLite.

#include <mutex>

namespace autonous::db {

std::mutex& write_gate() noexcept;

}  // namespace autonous::db
