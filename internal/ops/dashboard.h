#pragma once
// Dashboard: the operator's read-only pages, rendered on the server from the database (no build
// step, no script):
//   /           overview: tasks by status now and over time, throughput, latency percentiles,
//               failures with their errors, retry reasons, calls / tokens / cached share by model
//   /chats      the chats with recent tasks (and a search by id)
//   /chat?id=   one chat: its turns as a plot of the history's tokens before compression and the
//               prompt's after (recalled evidence included) against the budget and thresholds
//               (levels, compactions, summaries and recalls marked), its warnings, its turn
//               table (with each turn's decision sentence, recall terms and warnings), recalled
//               messages, its transcript (paged: &before=, searched: &q=), settings, state and
//               summary
// Every page takes &refresh=N (5…3600 s) to reload itself (html::with_refresh).
//   /task?id=   one task: its row, the reply or the error, the prompt figures, the event trail
// Every query is bounded (the newest N rows, by index), so a page costs the same on a database
// of any age. Each function returns nullopt for an unknown chat or task.

#include <cstdint>
#include <optional>
#include <string>

#include "internal/engine/context_settings.h"
#include "internal/ops/page_db.h"
#include "internal/ops/task_counts.h"

namespace autonous::ops {

std::string overview_page(PageDb& db, TaskCounts& counts);
std::string chats_page(PageDb& db, const std::string& search);
// Which page of a chat's transcript: the messages older than `before` (a history id; 0: from the
// newest), only those holding `search` (case-insensitive; empty: all).
struct TranscriptView {
  int64_t before = 0;
  std::string search;
};

// `settings`: the engine's settings from the environment (the thresholds drawn on the plot are
// the chat's effective ones).
std::optional<std::string> chat_page(PageDb& db, const std::string& chat_id,
                                     const engine::ContextSettings& settings,
                                     const TranscriptView& transcript = {});
// The transcript section of the chat page: a search form, a page of messages, paging links.
std::string transcript_section(PageDb& db, const std::string& chat_id, const TranscriptView& view);
std::optional<std::string> task_page(PageDb& db, int64_t task_id);

}  // namespace autonous::ops
