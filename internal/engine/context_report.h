#pragma once
// Renders a BuiltContext, once for every reader: the context.compressed and context.summarized
// event payloads, the dry run's JSON (`autonous context`) and the one-line decision sentence.
// Pure; text that is not valid UTF-8 is replaced, never thrown on.

#include <string>

#include "internal/engine/built_context.h"

namespace autonous::engine {

// What the engine decided, in one line: "aggressive: dropped 12 oldest messages …".
std::string describe_decision(const BuiltContext& built);

// The context.compressed event payload: a JSON object of the figures (original_count,
// compressed_count, estimated_tokens, budget_tokens, dropped_count, truncated_count, level,
// strategy, …), with "after_overflow": true for a rebuild after a provider's overflow.
std::string figures_json(const BuiltContext& built, bool after_overflow = false);

// The context.summarized event payload. REQUIRES: built.summarized.
std::string summarized_json(const BuiltContext& built);

// `autonous context` output: {"messages": [{role, content}…], figures…, decision, thresholds,
// warnings}.
std::string dry_run_json(const BuiltContext& built);

}  // namespace autonous::engine
