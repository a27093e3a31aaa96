#pragma once
// The events a queue records, built the same way on every backend: agent.started when a task is
// claimed (its payload: attempt, worker_id, reclaimed, priority) and task.requeued. Pure: the
// backend appends them in the claim's or the requeue's own transaction.

#include <cstdint>
#include <string>

#include "internal/events/event_log.h"
#include "internal/queue/task.h"

namespace autonous::queue {

// agent.started for `task`, just claimed by `worker_id` (attempts and reclaimed already set).
events::Event agent_started(const Task& task, const std::string& worker_id);

// task.requeued for the failed task `task_id` of `chat_id`, put back in the queue.
events::Event task_requeued(int64_t task_id, const std::string& chat_id);

}  // namespace autonous::queue
