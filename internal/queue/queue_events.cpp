#include "internal/queue/queue_events.h"

#include <nlohmann/json.hpp>

#include "internal/events/event_types.h"

namespace autonous::queue {

// Mirrored by PostgreSQL's claim statement (backend/postgres/queue_statements.cpp), which
// writes the same payload in SQL; tests/backend/queue_conformance_test.cpp holds both to it.
events::Event agent_started(const Task& task, const std::string& worker_id) {
  events::Event e;
  e.type = std::string(events::kAgentStarted);
  e.task_id = task.id;
  e.chat_id = task.chat_id;
  // `replace`: a worker id is the operator's text; invalid UTF-8 must not make the claim throw.
  e.payload = nlohmann::json{{"attempt", task.attempts},
                             {"worker_id", worker_id},
                             {"reclaimed", task.reclaimed},
                             {"priority", task.priority}}
                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return e;
}

events::Event task_requeued(int64_t task_id, const std::string& chat_id) {
  events::Event e;
  e.type = std::string(events::kTaskRequeued);
  e.task_id = task_id;
  e.chat_id = chat_id;
  return e;
}

}  // namespace autonous::queue
