#pragma once
// The history a turn carries (a step of ContextBuilder::build): what the plan kept, fitted into
// what the ends and the summary leave by the Compressor. The oversized messages up to the chat's
// cut mark are carried cut, newer ones whole until the next compaction (what is cut changes only at
// a compaction, so the prompt only grows at its end between them). The mark moves to the newest
// message with a compaction that moved the start, and with one for tokens that cutting alone
// meets unless every oversized message is cut already; a window compaction whose fold failed and
// kept everything moves nothing. Over the budget with newer messages whole, every oversized
// message is cut before the last resort drops anything, and the mark follows. Pure.

#include <cstdint>

#include "internal/engine/compaction.h"
#include "internal/engine/compressor.h"
#include "internal/engine/context_ends.h"
#include "internal/engine/context_verbatim.h"
#include "internal/engine/provider.h"

namespace autonous::engine {

struct Fitted {
  Compression compression;  // of the messages from the cut on
  int64_t cut_through = 0;  // the chat's cut mark after this turn
};

// Fits verbatim.rows from cut.first on, with the summary's `summary_tokens`, the chat's state
// `before` this turn and the policy's `target`.
Fitted fit_history(const Compressor& compressor, const Verbatim& verbatim, const Cut& cut,
                   const Ends& ends, int64_t summary_tokens, const ContextState& before,
                   double target);

}  // namespace autonous::engine
