#pragma once
// The verbatim part a turn starts from (a step of ContextBuilder::build): the chat's messages after
// where its last compaction left it (at most read_limit() of them, each prepared: defused,
// capped at a quarter of the budget) and, under summarize, the summary in use (bounded as the
// next fold would bound it). A chat whose rows vanished (its newest id below where the state
// starts: rows deleted and ids reused) starts over from its clear point, with a warning.
// Reads the provider and the summary store; changes nothing.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "internal/engine/built_context.h"
#include "internal/engine/compaction.h"
#include "internal/engine/compressor.h"
#include "internal/engine/context_ends.h"
#include "internal/engine/context_settings.h"
#include "internal/engine/provider.h"
#include "internal/engine/summary.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

// The verbatim candidates of this turn and the summary in use.
struct Verbatim {
  Prepared rows;
  std::optional<Summary> summary;
  int64_t summary_tokens = 0;
  int64_t after = 0;   // rows above this id were read
  bool full = false;   // read as many as asked: older ones may be unread
  bool older = false;  // older messages of the chat (after its clear point) left the prompt
  // `rows` are all of the chat's history since its clear point: read (fewer than asked), nothing
  // older left, and none read left out by prepare() (a leading tool row whose call is gone).
  bool whole = false;
  // Rows read without a count stored by the counter's stored_name(), counted now (to store).
  std::vector<TokenCount> counted;
};

struct VerbatimRead {
  Verbatim verbatim;
  // The rows vanished: the fresh state the turn goes on from (stored even without a compaction),
  // and the warning that says so.
  std::optional<ContextState> restarted;
  std::optional<ContextWarning> warning;
};

// Where the verbatim part is read from. `summaries` may be null (no summarize).
struct VerbatimSource {
  Provider& provider;
  SummaryStore* summaries;
  const ContextSettings& settings;
  const tokens::TokenCounter& counter;
};

// The verbatim part of `chat_id` for `chat` in `state`, with the ends' budget; none when the
// user message was cut (it takes the whole budget). Throws what the provider throws.
VerbatimRead read_verbatim(const VerbatimSource& source, const std::string& chat_id,
                           const ResolvedChat& chat, const ContextState& state, const Ends& ends,
                           const Marks& marks);

// `rows` from index `first` on.
Prepared rows_from(const Prepared& rows, size_t first);

}  // namespace autonous::engine
