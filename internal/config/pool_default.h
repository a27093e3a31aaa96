#pragma once
// DATABASE_POOL_SIZE's default, from the machine: 2 connections a CPU core this process may
// run on, at least 4 and at most 8. A pool larger than a small machine's cores only adds server
// processes taking turns on the same cores when PostgreSQL shares the host: on 2 cores 4 × 64
// slots with a 1 s stub drained faster with 4 a process than with 8 (bench/README.md, "A pool
// the size of the machine"). A worker on a small machine whose server runs elsewhere may want
// more: the variable sets it.

namespace autonous::config {

// The CPUs this process may run on: its affinity mask (taskset, a cpuset), not a CPU quota
// (`docker --cpus`, a Kubernetes limit); 0 when unknown.
unsigned usable_cores();
// 2 × `cores`, between 4 and 8; 8 when `cores` is 0 (unknown).
int default_pool_size(unsigned cores);

}  // namespace autonous::config
