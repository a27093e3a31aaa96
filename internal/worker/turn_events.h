#pragma once
// The events of one turn, built from its TurnOutcome and nothing else: turn.started, then per
// context built context.summarized / context.warning / context.summary_failed /
// context.compressed / llm.request, llm.retry (recompress) between an overflow and the rebuild,
// and the ending: llm.response + turn.completed, llm.retry, turn.failed or agent.released.
// A lost lease records nothing (nothing of the turn is committed). Pure.

#include <vector>

#include "internal/events/event_log.h"
#include "internal/queue/task.h"
#include "internal/worker/turn_outcome.h"

namespace autonous::worker {

std::vector<events::Event> turn_events(const queue::Task& task, const TurnOutcome& outcome);

}  // namespace autonous::worker
