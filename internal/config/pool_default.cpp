#include "internal/config/pool_default.h"

#include <algorithm>
#include <thread>

#include <sched.h>

namespace autonous::config {

unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return static_cast<unsigned>(CPU_COUNT(&set));
  return std::thread::hardware_concurrency();  // more than CPU_SETSIZE CPUs: EINVAL above
}

int default_pool_size(unsigned cores) {
  if (cores == 0) return 8;
  return static_cast<int>(std::clamp(2U * cores, 4U, 8U));
}

}  // namespace autonous::config
