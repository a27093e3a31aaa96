#pragma once
// The budget allocator: how a turn's prompt budget is shared between its blocks (blocks.h).
// P0 (the system prompt) and P1 (the chat's pinned facts, the user's message) are reserved
// first. Of the rest (the flexible part), a chat with long-term material — history outside the
// verbatim part, or a summary — gives `RECALL_SHARE` (0.45) to long-term memory: the summary
// (under summarize, the room a new one may take) and evidence (recalled messages, documents),
// the evidence's part at most `RECALL_MAX_TOKENS`; the verbatim history plans its compactions
// within the rest, so a turn's evidence never moves the stable prefix. A chat
// without (a short one) gives it all to the recent history. Unused room flows forward, toward
// the end of the prompt: whatever the history and summary leave of the whole budget is the
// evidence's room (never the other way, which would change the cached prefix every turn).
// Pinned facts take at most kPinnedShare of the budget (the oldest beyond it are left out).
// Pure.

#include <cstdint>

#include "internal/context/recall_select.h"

namespace autonous::context {

inline constexpr double kPinnedShare = 0.2;

struct AllocationInput {
  int64_t budget = 0;   // the whole prompt
  int64_t fixed = 0;    // framing, P0 and P1
  int64_t summary = 0;  // what the summary takes of the long-term share
  bool long_term = false;
  RecallSettings recall;
};

// Tokens of the budget kept from the verbatim history for evidence.
int64_t evidence_reserve(const AllocationInput& in);

}  // namespace autonous::context
