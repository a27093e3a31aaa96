#pragma once
// Task: a claimed row of `tasks`, with the lease that proves this worker owns it.

#include <cstdint>
#include <string>

#include "internal/common/clock.h"

namespace autonous::queue {

struct Task {
  int64_t id = 0;
  std::string chat_id;
  std::string text;
  int64_t priority = 0;
  int attempts = 0;        // including this claim
  bool reclaimed = false;  // claimed from an expired lease (a worker died or hung)
  std::string lease_token;
  int64_t agent_event_id = 0;  // the agent.started event of this claim; parent of turn events
  common::TimePoint first_claimed_at;  // the first claim (since a requeue): the retry budget
  int lease_expiries = 0;  // claims (this one included) taken over from an expired lease
  // When it was queued (tasks.created_at; the epoch when the row's text is not a time): the
  // start of the user's wait for its reply.
  common::TimePoint enqueued_at;
};

}  // namespace autonous::queue
