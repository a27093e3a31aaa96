#pragma once
// OPENAI_FALLBACK_MODEL (#31): a task whose main model kept failing with provider errors (a
// 5xx, Anthropic's 529 "overloaded", a 429 past its retries, a timeout) is answered by the
// fallback model for its remaining attempts. Whether an attempt is one of those is read from
// the task's own llm.retry events: the attempts just before it, newest first, each ended in a
// provider failure, FALLBACK_AFTER_FAILURES of them in a row. A lease lost or any other
// failure between them breaks the run (the main model again); a requeue starts it afresh.

#include <string_view>
#include <vector>

#include "internal/events/event_log.h"

namespace autonous::worker {

// http_408, http_429, http_5xx (529 included) and timeout: the provider's trouble, not the
// request's (a 400 or a content filter would fail the fallback the same).
bool is_provider_failure(std::string_view reason);

// How many attempts right before `attempt` (1-based, this claim's) ended in a provider failure,
// in a row, from the task's llm.retry events (any order; an overflow's recompress retries are
// not attempts' ends).
int provider_failures_before(const std::vector<events::StoredEvent>& retries, int attempt);

}  // namespace autonous::worker
