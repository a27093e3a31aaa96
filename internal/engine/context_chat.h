#pragma once
// The chat a turn starts from (ContextBuilder's first step): its effective policy (its own
// settings over the environment's; bad stored settings are ignored with a warning), the strategy
// that can run (summarize without a summary store falls back to token_budget), its pins, blocks
// and custom blocks, and the context state the turn begins with (a state written before the
// chat's latest clear point belongs to the cleared context: a fresh one). A pure value of the
// settings, what the database holds and the counter: no I/O.

#include <functional>
#include <string>
#include <vector>

#include "internal/engine/built_context.h"
#include "internal/engine/context_settings.h"
#include "internal/engine/provider.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

struct ChatStart {
  ResolvedChat chat;
  ContextState state;  // the state this turn starts from
  std::vector<ContextWarning> warnings;
};

// `has_summary_store`: whether the engine can keep summaries (summarize needs it).
// `on_model`: called with the chat's own model before its budget is checked with `counter`
// (the caller switches the counter), and with OPENAI_MODEL when the settings then prove bad.
ChatStart start_chat(const ContextSettings& settings, ChatState stored,
                     const tokens::TokenCounter& counter, bool has_summary_store,
                     const std::function<void(const std::string&)>& on_model = {});

}  // namespace autonous::engine
