#pragma once
// The finished prompt described (the last step of ContextBuilder::build): its blocks in prompt
// order (what each costs and holds: the event's `blocks`), and the delta builder's comparison of
// its stable blocks (system, pinned, summary, history) with the chat's last answered prompt's,
// block by block by hash: the leading run of reused blocks is the prefix a provider can cache.
// Pure.

#include <cstdint>
#include <vector>

#include "internal/common/message.h"
#include "internal/engine/built_context.h"
#include "internal/engine/context_ends.h"
#include "internal/engine/custom_blocks.h"
#include "internal/engine/provider.h"
#include "internal/recall/recall.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

// What the prompt holds besides its ends: the kept history as placed (the summary leading its
// first message) and what it cost, the summary in use, the evidence and custom blocks joined.
struct PromptContents {
  const std::vector<common::Message>& history;
  int64_t history_tokens = 0;
  const SummaryInUse& summary;
  const recall::Evidence& evidence;
  const CustomFit& custom;
};

std::vector<Block> describe_blocks(const Ends& ends, const PromptContents& contents);

// This prompt's stable blocks against `last` (the chat's last answered prompt's).
Delta compute_delta(const Ends& ends, const PromptContents& contents,
                    const std::vector<BlockRecord>& last, const tokens::TokenCounter& counter);

}  // namespace autonous::engine
