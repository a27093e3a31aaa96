#pragma once
// ContextSettings: what the engine is configured with (from the environment, through
// engine_settings), and the rules that judge a policy against them, written once:
// the least budget that holds the system prompt and a user message, the model's ceiling over a
// chat's budget, and the room summarize needs. Pure values.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "internal/engine/model_presets.h"
#include "internal/engine/policy.h"
#include "internal/recall/recall_select.h"

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

// Tokens always left for the user message: a budget that cannot hold the system prompt plus
// this much is refused as configuration.
inline constexpr int64_t kMinUserTokens = 16;

// Without MAX_CHARS_PER_MESSAGE, one history message may cost at most budget / this.
inline constexpr int64_t kMessageShareDivisor = 4;

// The summarize strategy's knobs.
struct SummarySettings {
  int64_t keep_recent_tokens = 0;  // verbatim tail kept at a compaction; 0: a quarter of the budget
  int64_t max_tokens = 1024;       // SUMMARY_MAX_TOKENS: the summary's reply cap
};

// How blocks become messages (CONTEXT_LAYOUT).
//   default:   system prompt (+ pinned facts) · summary leading the first kept user message ·
//              verbatim history · the user's text, then the evidence, in the last message;
//   sectioned: the same order under the seed's section names: [Role & Policies] and [State]
//              (pinned facts) in the system message, the history as [Context], and [Task],
//              [Evidence], [Output] in the last message (the per-turn sections stay at the end,
//              so the cacheable prefix survives);
//   minimal:   the system prompt (+ pinned facts) and the last message only: no history and no
//              summary; the conversation reaches the model through recall alone.
enum class Layout { kDefault, kSectioned, kMinimal };
std::optional<Layout> parse_layout(std::string_view name);
std::string_view to_string(Layout layout);

struct ContextSettings {
  std::string system_prompt;
  int history_window = 100;           // the high mark in messages (compaction.h)
  int64_t max_chars_per_message = 0;  // 0: a history message may cost kMessageShare of the budget
  int keep_recent_messages = 6;       // the floor no compaction folds or drops
  ContextPolicy policy;               // the environment's defaults; a chat's overrides go on top
  int64_t ceiling = 0;  // window − reserve when the model's window is known; 0: none
  // OPENAI_MODEL, and MAX_CONTEXT_TOKENS when set: a chat with a model of its own (`chat set
  // --model`) takes its budget's default and ceiling from that model's preset, capped by it.
  std::string model;
  std::optional<int64_t> max_context_tokens;
  SummarySettings summary;
  recall::RecallSettings recall;
  Layout layout = Layout::kDefault;
};

// The least whole-prompt budget that holds `system_prompt`, the framing and kMinUserTokens.
int64_t min_budget(const std::string& system_prompt, const tokens::TokenCounter& counter);

// Throws PolicyError (field "max_tokens", message says why) when `settings` leave less than
// kMinUserTokens for the user message after the system prompt and framing, and PolicyError for
// a policy that fails validate().
void check_budget(const ContextSettings& settings, const tokens::TokenCounter& counter);

// Throws PolicyError (field "max_tokens") when the policy is summarize and its budget is under
// twice SUMMARY_MAX_TOKENS: a summary may take at most half of the prompt.
void check_summary_room(const ContextSettings& settings);

// The environment's policy with a chat's overrides on top, its budget never above the model's
// ceiling. A chat's own model (another than OPENAI_MODEL) brings its preset's budget (window −
// reserve, within MAX_CONTEXT_TOKENS when set; 8000 for a model of unknown window) as the
// default, and its ceiling. The one place a chat's effective policy is computed.
ContextPolicy effective_policy(const ContextSettings& settings, const ChatOverrides& overrides);

// The budget `model` gets under `settings`: the environment's for OPENAI_MODEL (or none given),
// else the model's preset within MAX_CONTEXT_TOKENS. Throws PolicyError (field "model") when the
// preset cannot give one.
PromptBudget model_budget(const ContextSettings& settings, const std::optional<std::string>& model);

}  // namespace autonous::engine
