#pragma once
// When a task that failed transiently runs again: the server's Retry-After when it sent one,
// else exponential from `base` (doubling per attempt) capped at `max`, minus up to 25 % jitter
// so that tasks failed together do not return together. Pure apart from the random source.

#include <chrono>
#include <optional>
#include <random>

#include "internal/openai/retry_after.h"

namespace autonous::worker {

// Longest Retry-After we obey; a server asking for more is capped here.
inline constexpr std::chrono::milliseconds kMaxRetryAfter = openai::kMaxRetryWait;

// `attempt` is the attempt that just failed (1 for the first).
std::chrono::milliseconds backoff_delay(int attempt, std::chrono::milliseconds base,
                                        std::chrono::milliseconds max,
                                        std::optional<std::chrono::milliseconds> retry_after,
                                        std::mt19937_64& rng);

}  // namespace autonous::worker
