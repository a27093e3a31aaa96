#pragma once
// Compaction planning: where the verbatim part of a chat's prompt starts after this turn. The
// verbatim part only grows at its end between compactions (a provider's prompt cache serves it);
// a compaction happens when it crosses a mark — more messages than the high mark (the window),
// usage at or over the warn threshold, or a provider's overflow answer — and then moves the
// start down in one step: to the low mark in messages and the target share in tokens, never into
// the newest KEEP_RECENT_MESSAGES (the floor; only the last resort, when the budget cannot hold
// even those, drops them) and always onto a user message (for a token compaction, the one that
// lands nearest the target while under the soft threshold). A token compaction that the floor
// would leave over warn is not made (it would repeat every turn); the prompt then grows until
// the compressor's last resort. Pure: no I/O.

#include <cstddef>
#include <cstdint>
#include <span>

#include "internal/common/message.h"
#include "internal/engine/context_settings.h"
#include "internal/engine/provider.h"

namespace autonous::engine {

// The least slack a turn reads over the high mark (read_limit).
inline constexpr int kReadSlack = 8;

// The low mark is at most this share of the high mark, whatever the target.
inline constexpr double kMaxLowShare = 0.8;

// The message-count marks of one chat's policy.
struct Marks {
  int high = 0;   // more verbatim messages than this: a compaction
  int low = 0;    // a compaction keeps at most this many
  int floor = 0;  // the newest messages a compaction keeps whatever the marks say
};

// What a turn reads of the verbatim part: the high mark plus slack for what arrived since the
// last turn (a reply and a question, or a front end's batch), so the rows a compaction moves
// past were all read (under summarize, folded). More than that since the last compaction (a long
// chat switched to summarize) is left unread: the work per turn stays bounded.
int read_limit(const Marks& marks);

// token_budget and summarize: high = HISTORY_WINDOW, low = target × HISTORY_WINDOW;
// sliding_window: low = RECENT_MESSAGE_COUNT, high = three times that (at most HISTORY_WINDOW).
// The floor is KEEP_RECENT_MESSAGES, at most the low mark.
Marks count_marks(const ContextSettings& settings, const ContextPolicy& policy);

struct CutInput {
  std::span<const common::Message> messages;  // the verbatim candidates, oldest first
  std::span<const int64_t> cost;              // each one's tokens (before any level's cut)
  // Each one's tokens as the prompt will carry it: an oversized message cut by the normal level
  // (level_compressor.h). The trigger and the cut are judged with these; empty: `cost`.
  std::span<const int64_t> carried;
  // The sizes the trigger is judged with, when they differ from `carried` (a chat that has not
  // compacted yet carries its oversized messages whole until its first compaction); empty:
  // `carried`.
  std::span<const int64_t> trigger;
  int64_t fixed_tokens = 0;   // the rest of the prompt now (framing, system, user, summary)
  int64_t budget_tokens = 0;  // the whole prompt
  int64_t goal_tokens = 0;    // what the kept messages may cost after a token compaction
  Thresholds thresholds;
  Marks marks;
  bool overflow = false;  // a provider refused the last prompt as too long
};

struct Cut {
  size_t first = 0;  // messages before this index leave the verbatim part
  CompactionReason reason = CompactionReason::kNone;
  Level level = Level::kNone;  // by usage before the cut
};

Cut plan_cut(const CutInput& in);

// The index of the first user message at or after `from` (the end when there is none): kept
// history starts with a user message, as strict chat templates require, and never with a tool
// result made user text (tool_units.h), so never inside a tool unit.
size_t user_start(std::span<const common::Message> messages, size_t from);

}  // namespace autonous::engine
