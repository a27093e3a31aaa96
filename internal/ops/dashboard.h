#pragma once
// Dashboard: the operator's read-only pages, rendered on the server from the database (no build
// step, no script):
//   /           overview: tasks by status now and over time, throughput, latency percentiles,
//               failures with their errors, retry reasons, calls / tokens / cached share by model
//   /chats      the chats with recent tasks (and a search by id)
//   /chat?id=   one chat: its turns as a plot of prompt tokens before and after compression
//               against the budget and the thresholds (levels, compactions, summaries and
//               recalls marked), its turn table, recalled messages, settings, state and summary
//   /task?id=   one task: its row, the reply or the error, the prompt figures, the event trail
// Every query is bounded (the newest N rows, by index), so a page costs the same on a database
// of any age. Each function returns nullopt for an unknown chat or task.

#include <optional>
#include <string>

#include "internal/engine/context_settings.h"
#include "internal/ops/page_db.h"
#include "internal/ops/task_counts.h"

namespace autonous::ops {

std::string overview_page(PageDb& db, TaskCounts& counts);
std::string chats_page(PageDb& db, const std::string& search);
// `settings`: the engine's settings from the environment (the thresholds drawn on the plot are
// the chat's effective ones).
std::optional<std::string> chat_page(PageDb& db, const std::string& chat_id,
                                     const engine::ContextSettings& settings);
std::optional<std::string> task_page(PageDb& db, int64_t task_id);

}  // namespace autonous::ops
