#pragma once
// The prompt a turn sends (steps of ContextBuilder::build): the system message, the kept history
// (the summary leading its first user message, or the new one: data in the user's turn, and the
// roles still alternate as strict chat templates require) and the user message, ordered by the
// Assembler and counted; then blocks joined into the user message before the layout's suffix
// (evidence, custom blocks), each only when the recounted prompt still fits. Pure.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "internal/common/message.h"
#include "internal/engine/built_context.h"
#include "internal/engine/context_ends.h"
#include "internal/engine/custom_blocks.h"
#include "internal/engine/summary.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

class Assembler;

// The sectioned layout's evidence head (the others: context_ends.h).
inline constexpr std::string_view kEvidenceSection = "\n\n[Evidence]\n";

struct Prompt {
  std::vector<common::Message> messages;  // what is sent
  std::vector<common::Message> history;   // the kept history as placed (with the summary)
  int64_t tokens = 0;                     // the whole prompt, by the counter
  int64_t budget = 0;                     // what it may cost
};

// Orders `ends`, `kept` and the summary in use (none: nullopt) into a prompt and counts it.
Prompt assemble_prompt(const Assembler& assembler, const Ends& ends,
                       std::vector<common::Message> kept, const std::optional<Summary>& summary,
                       const tokens::TokenCounter& counter);

// Joins `block` into the last (user) message before the layout's suffix (`ends.suffix` bytes),
// after "\n\n" or the [Evidence] head, when the recounted prompt still fits: the tokens it added;
// nullopt (and nothing changed) otherwise.
std::optional<int64_t> join_into_user(Prompt& prompt, const Ends& ends, bool section_head,
                                      const std::string& block,
                                      const tokens::TokenCounter& counter);

struct CustomStep {
  CustomFit fit;  // placed (its text cleared: the prompt holds it)
  std::optional<ContextWarning> warning;
};

// P4: the chat's custom blocks in the room the prompt leaves, after the evidence (under its head
// when `section_head`). None when the user message was cut to fit: P4 gives way before P1.
CustomStep add_custom(Prompt& prompt, const Ends& ends, const std::vector<CustomBlock>& blocks,
                      bool user_truncated, bool section_head, const tokens::TokenCounter& counter);

}  // namespace autonous::engine
