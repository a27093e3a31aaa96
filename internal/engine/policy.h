#pragma once
// ContextPolicy: how one chat's context is fitted — the strategy, the whole-prompt budget, the
// recent-message count and the compression thresholds. The environment gives the defaults; a
// chat's overrides (the JSON object in chat_settings.settings) are merged on top. Pure values:
// parsing, merging and validation, no I/O.

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace autonous::engine {

enum class Strategy { kSlidingWindow, kTokenBudget, kSummarize };
std::optional<Strategy> parse_strategy(std::string_view name);
std::string_view to_string(Strategy strategy);

// Shares of the prompt budget. Usage u = estimated prompt tokens / prompt budget.
struct Thresholds {
  double soft = 0.70;    // from here: cut oversized messages (Normal)
  double warn = 0.85;    // from here: also drop the oldest history down to `target` (Aggressive)
  double hard = 0.95;    // from here: hard truncation until it fits (Emergency)
  double target = 0.60;  // where compression aims, below the triggers (hysteresis)
};

enum class Level { kNone, kNormal, kAggressive, kEmergency };
std::string_view to_string(Level level);
Level classify(double usage, const Thresholds& thresholds);

// The names of the tools offered to a chat (`chat set --tools`); unset: every declared tool.
using ToolNames = std::optional<std::vector<std::string>>;

struct ContextPolicy {
  Strategy strategy = Strategy::kTokenBudget;
  int64_t max_tokens = 8000;     // the whole prompt
  int64_t recent_messages = 20;  // sliding_window's message count
  Thresholds thresholds;
  ToolNames tools;  // the tools' declarations take part of max_tokens
  // The chat's own model (`chat set --model`, #31); unset: OPENAI_MODEL. Its preset gives the
  // budget's default and ceiling, the worker its counter, calls and prices.
  std::optional<std::string> model;
};

// A chat's own settings: only what was set.
struct ChatOverrides {
  std::optional<Strategy> strategy;
  std::optional<int64_t> max_tokens;
  std::optional<int64_t> recent_messages;
  std::optional<double> soft;
  std::optional<double> warn;
  std::optional<double> hard;
  std::optional<double> target;
  ToolNames tools;  // empty list: none
  std::optional<std::string> model;
  bool empty() const noexcept;
};

// One per-chat setting, described once: its chat_settings key, its `chat set` flag, the
// environment variable that gives its default, its help text, and where it lives in
// ChatOverrides and ContextPolicy. Parsing, merging, validation, `chat show`, the CLI flags and
// the names in error messages all come from policy_fields().
struct PolicyField {
  enum class Kind { kStrategy, kCount, kShare, kTools, kModel };
  std::string_view key;       // chat_settings JSON key
  std::string_view flag;      // `autonous chat set` flag
  std::string_view variable;  // environment variable of the default
  std::string_view help;
  Kind kind = Kind::kShare;
  int64_t max = 0;  // kCount: values from 1 to max
  std::optional<int64_t> ChatOverrides::*count = nullptr;
  int64_t ContextPolicy::*policy_count = nullptr;
  std::optional<double> ChatOverrides::*share = nullptr;
  double Thresholds::*policy_share = nullptr;
};

// Every per-chat setting, in display order: strategy, max_tokens, recent_messages, soft, warn,
// hard, target, tools, model.
std::span<const PolicyField> policy_fields() noexcept;
// The field with JSON key `key`; nullptr when there is none.
const PolicyField* find_policy_field(std::string_view key) noexcept;

// A bad setting. `field()` is the JSON key at fault ("strategy", "max_tokens", "soft", …).
class PolicyError : public std::invalid_argument {
 public:
  PolicyError(std::string field, const std::string& message);
  const std::string& field() const noexcept { return field_; }

 private:
  std::string field_;
};

// Keys of the chat_settings JSON object.
inline constexpr std::string_view kKeyStrategy = "strategy";
inline constexpr std::string_view kKeyMaxTokens = "max_tokens";
inline constexpr std::string_view kKeyRecent = "recent_messages";
inline constexpr std::string_view kKeySoft = "soft";
inline constexpr std::string_view kKeyWarn = "warn";
inline constexpr std::string_view kKeyHard = "hard";
inline constexpr std::string_view kKeyTarget = "target";
inline constexpr std::string_view kKeyTools = "tools";
inline constexpr std::string_view kKeyModel = "model";

// A model name a chat may be given: 1 to 200 printable ASCII characters without spaces (as
// providers spell them: "gpt-4.1-mini", "meta-llama/Llama-3.1-8B-Instruct", "qwen3:8b").
bool valid_model_name(std::string_view name) noexcept;

// A tool name the wire takes: 1 to 64 of A-Z a-z 0-9 _ -.
bool valid_tool_name(std::string_view name) noexcept;
// `chat set --tools`: "none" or names separated by commas (spaces around them ignored). Throws
// PolicyError (field "tools") for an empty or invalid name or a repeated one.
std::vector<std::string> parse_tool_list(std::string_view text);

// Parses a chat_settings object. Throws PolicyError for bad JSON, unknown keys, wrong types or
// values out of range (ordering is checked by validate(), on the merged policy).
ChatOverrides parse_overrides(std::string_view json_text);
// The overrides as a JSON object holding only the keys that are set.
std::string overrides_json(const ChatOverrides& overrides);
// `base` with every set override applied; later values win (`more` over `base`).
ChatOverrides merge(ChatOverrides base, const ChatOverrides& more);
ContextPolicy apply(ContextPolicy defaults, const ChatOverrides& overrides);

// Throws PolicyError when a value is out of range or the thresholds are not ordered
// 0 < target ≤ soft ≤ warn ≤ hard ≤ 1.
void validate(const ContextPolicy& policy);

}  // namespace autonous::engine
