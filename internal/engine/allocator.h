#pragma once
// The budget allocator: how a turn's prompt budget is shared between its blocks (blocks.h).
// P0 (the system prompt) and P1 (the chat's pinned facts, the user's message) are reserved
// first. Of the rest (the flexible part), `RECALL_SHARE` (0.45) goes to long-term memory: the
// summary (under summarize, the room a new one may take) and evidence (recalled messages,
// documents), the evidence's part at most `RECALL_MAX_TOKENS`; the recent history gets the rest.
// Only long conversations (over kLongTermTurns turns) reserve it: a short one's history all
// stays recent. A compaction plans with this reserve, asks recall what it finds below the
// planned cut and plans again with what was found (evidence first, ContextBuilder::build): the
// prompt lands on the target (CONTEXT_TARGET, the compaction's depth) with the evidence it
// carries, and no room is kept for evidence that never comes;
// between compactions the history grows into whatever the evidence leaves, until the warn
// threshold of the whole budget starts the next compaction. Unused room flows both ways
// without moving the cached prefix: the evidence takes whatever the prompt leaves of the whole
// budget each turn, and the history's growth uses the reserve when evidence does not.
// Pinned facts take at most kPinnedShare of the budget (the oldest beyond it are left out).
// Pure.

#include <cstdint>

#include "internal/recall/recall_select.h"

namespace autonous::engine {

inline constexpr double kPinnedShare = 0.2;
// A chat with more turns than this (user and assistant messages) reserves long-term memory.
inline constexpr int kLongTermTurns = 20;

struct AllocationInput {
  int64_t budget = 0;     // the whole prompt
  int64_t fixed = 0;      // framing, P0 and P1
  int64_t summary = 0;    // what the summary takes of the long-term share
  bool long_term = true;  // the chat has or will have history outside the verbatim part
  recall::RecallSettings recall;
};

// Tokens of the budget kept from the verbatim history for evidence.
int64_t evidence_reserve(const AllocationInput& in);

}  // namespace autonous::engine
