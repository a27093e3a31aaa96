#include "internal/queue/task_queue.h"

namespace autonous::queue {

int64_t TaskQueue::requeue_failed() {
  int64_t n = 0;
  for (const int64_t id : failed_ids()) n += requeue(id) ? 1 : 0;
  return n;
}

}  // namespace autonous::queue
