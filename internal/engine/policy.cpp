#include "internal/engine/policy.h"

#include <algorithm>
#include <array>

#include <nlohmann/json.hpp>

#include "internal/engine/provider.h"

namespace autonous::engine {
namespace {

using nlohmann::json;

constexpr int64_t kMaxBudget = 100'000'000;
constexpr int kMaxRecent = 100'000;
constexpr size_t kMaxTools = 128;

std::string show(double v) {
  std::string s = json(v).dump();
  return s;
}

double read_share(const json& v, std::string_view key) {
  if (!v.is_number()) throw PolicyError(std::string(key), "must be a number between 0 and 1");
  const double d = v.get<double>();
  if (!(d > 0.0 && d <= 1.0)) throw PolicyError(std::string(key), show(d) + " is not in (0, 1]");
  return d;
}

}  // namespace

PolicyError::PolicyError(std::string field, const std::string& message)
    : std::invalid_argument(field + ": " + message), field_(std::move(field)) {}

std::optional<Strategy> parse_strategy(std::string_view name) {
  if (name == "sliding_window") return Strategy::kSlidingWindow;
  if (name == "token_budget") return Strategy::kTokenBudget;
  if (name == "summarize") return Strategy::kSummarize;
  return std::nullopt;
}

std::string_view to_string(Strategy strategy) {
  switch (strategy) {
    case Strategy::kSlidingWindow:
      return "sliding_window";
    case Strategy::kTokenBudget:
      return "token_budget";
    case Strategy::kSummarize:
      return "summarize";
  }
  return "token_budget";
}

std::string_view to_string(CompactionReason reason) {
  switch (reason) {
    case CompactionReason::kNone:
      return "none";
    case CompactionReason::kWindow:
      return "window";
    case CompactionReason::kThreshold:
      return "threshold";
    case CompactionReason::kOverflow:
      return "overflow";
  }
  return "none";
}

std::string_view to_string(Level level) {
  switch (level) {
    case Level::kNone:
      return "none";
    case Level::kNormal:
      return "normal";
    case Level::kAggressive:
      return "aggressive";
    case Level::kEmergency:
      return "emergency";
  }
  return "none";
}

Level classify(double usage, const Thresholds& t) {
  if (usage >= t.hard) return Level::kEmergency;
  if (usage >= t.warn) return Level::kAggressive;
  if (usage >= t.soft) return Level::kNormal;
  return Level::kNone;
}

namespace {

using Kind = PolicyField::Kind;

const std::array<PolicyField, 9> kFields = {{
    {kKeyStrategy, "--strategy", "CONTEXT_STRATEGY", "sliding_window, token_budget or summarize",
     Kind::kStrategy},
    {kKeyMaxTokens, "--max-tokens", "MAX_CONTEXT_TOKENS",
     "whole-prompt budget in tokens (at most window - reserve)", Kind::kCount, kMaxBudget,
     &ChatOverrides::max_tokens, &ContextPolicy::max_tokens},
    {kKeyRecent, "--recent", "RECENT_MESSAGE_COUNT", "sliding_window's newest-message count",
     Kind::kCount, kMaxRecent, &ChatOverrides::recent_messages, &ContextPolicy::recent_messages},
    {kKeySoft, "--soft", "CONTEXT_SOFT_THRESHOLD", "usage share where Normal starts", Kind::kShare,
     0, nullptr, nullptr, &ChatOverrides::soft, &Thresholds::soft},
    {kKeyWarn, "--warn", "CONTEXT_WARN_THRESHOLD", "usage share where Aggressive starts",
     Kind::kShare, 0, nullptr, nullptr, &ChatOverrides::warn, &Thresholds::warn},
    {kKeyHard, "--hard", "CONTEXT_HARD_THRESHOLD", "usage share where Emergency starts",
     Kind::kShare, 0, nullptr, nullptr, &ChatOverrides::hard, &Thresholds::hard},
    {kKeyTarget, "--target", "CONTEXT_TARGET", "usage share compression aims at", Kind::kShare, 0,
     nullptr, nullptr, &ChatOverrides::target, &Thresholds::target},
    {kKeyTools, "--tools", "TOOLS_FILE",
     "the tools offered: names from TOOLS_FILE separated by commas, none, or all (the default)",
     Kind::kTools},
    {kKeyModel, "--model", "OPENAI_MODEL",
     "the model this chat's turns use: its preset's window, counter and prices follow; default "
     "OPENAI_MODEL's",
     Kind::kModel},
}};

// A list of tool names as stored: unique valid names, at most kMaxTools.
std::vector<std::string> checked_tools(std::vector<std::string> names) {
  const std::string key(kKeyTools);
  if (names.size() > kMaxTools)
    throw PolicyError(key, "at most " + std::to_string(kMaxTools) + " names");
  for (size_t i = 0; i < names.size(); ++i) {
    if (!valid_tool_name(names[i]))
      throw PolicyError(key, json(names[i]).dump(-1, ' ', false, json::error_handler_t::replace) +
                                 " is not a tool name (1 to 64 of A-Z a-z 0-9 _ -)");
    if (std::find(names.begin(), names.begin() + static_cast<ptrdiff_t>(i), names[i]) !=
        names.begin() + static_cast<ptrdiff_t>(i))
      throw PolicyError(key, "\"" + names[i] + "\" is named twice");
  }
  return names;
}

bool is_set(const PolicyField& f, const ChatOverrides& o) {
  switch (f.kind) {
    case Kind::kStrategy:
      return o.strategy.has_value();
    case Kind::kCount:
      return (o.*f.count).has_value();
    case Kind::kShare:
      return (o.*f.share).has_value();
    case Kind::kTools:
      return o.tools.has_value();
    case Kind::kModel:
      return o.model.has_value();
  }
  return false;
}

// Copies field `f` from `from` into `to` when it is set there.
void copy_if_set(const PolicyField& f, const ChatOverrides& from, ChatOverrides& to) {
  switch (f.kind) {
    case Kind::kStrategy:
      if (from.strategy) to.strategy = from.strategy;
      break;
    case Kind::kCount:
      if (from.*f.count) to.*f.count = from.*f.count;
      break;
    case Kind::kShare:
      if (from.*f.share) to.*f.share = from.*f.share;
      break;
    case Kind::kTools:
      if (from.tools) to.tools = from.tools;
      break;
    case Kind::kModel:
      if (from.model) to.model = from.model;
      break;
  }
}

void read_field(const PolicyField& f, const json& v, ChatOverrides& o) {
  const std::string key(f.key);
  switch (f.kind) {
    case Kind::kStrategy: {
      const auto s = v.is_string() ? parse_strategy(v.get<std::string>()) : std::nullopt;
      if (!s)
        throw PolicyError(key, v.dump() + " is not one of sliding_window, token_budget, summarize");
      o.strategy = s;
      break;
    }
    case Kind::kCount:
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > f.max)
        throw PolicyError(key, v.dump() + " is not an integer from 1 to " + std::to_string(f.max));
      o.*f.count = v.get<int64_t>();
      break;
    case Kind::kShare:
      o.*f.share = read_share(v, key);
      break;
    case Kind::kTools: {
      if (!v.is_array()) throw PolicyError(key, "must be an array of tool names");
      std::vector<std::string> names;
      for (const json& n : v) {
        if (!n.is_string()) throw PolicyError(key, n.dump() + " is not a tool name");
        names.push_back(n.get<std::string>());
      }
      o.tools = checked_tools(std::move(names));
      break;
    }
    case Kind::kModel:
      if (!v.is_string() || !valid_model_name(v.get<std::string>()))
        throw PolicyError(key, v.dump(-1, ' ', false, json::error_handler_t::replace) +
                                   " is not a model name (1 to 200 printable characters, no "
                                   "spaces)");
      o.model = v.get<std::string>();
      break;
  }
}

std::string known_keys() {
  std::string s;
  for (const auto& f : kFields) s += (s.empty() ? "" : ", ") + std::string(f.key);
  return s;
}

}  // namespace

std::span<const PolicyField> policy_fields() noexcept { return kFields; }

bool valid_tool_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 64 || name == "none" || name == "all") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

bool valid_model_name(std::string_view name) noexcept {
  return !name.empty() && name.size() <= 200 &&
         std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

std::vector<std::string> parse_tool_list(std::string_view text) {
  const auto trim = [](std::string_view t) {
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    return t;
  };
  if (trim(text) == "none") return {};
  std::vector<std::string> names;
  for (size_t from = 0;;) {
    const size_t comma = text.find(',', from);
    names.emplace_back(
        trim(text.substr(from, comma == std::string_view::npos ? text.npos : comma - from)));
    if (names.back().empty())
      throw PolicyError(std::string(kKeyTools),
                        "an empty name (give names separated by commas, or none)");
    if (comma == std::string_view::npos) break;
    from = comma + 1;
  }
  return checked_tools(std::move(names));
}

const PolicyField* find_policy_field(std::string_view key) noexcept {
  for (const auto& f : kFields)
    if (f.key == key) return &f;
  return nullptr;
}

bool ChatOverrides::empty() const noexcept {
  return std::none_of(kFields.begin(), kFields.end(),
                      [this](const PolicyField& f) { return is_set(f, *this); });
}

ChatOverrides parse_overrides(std::string_view json_text) {
  const json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw PolicyError("settings", "not a JSON object");
  ChatOverrides o;
  for (const auto& [key, v] : j.items()) {
    const PolicyField* f = find_policy_field(key);
    if (f == nullptr) throw PolicyError(key, "unknown setting (known: " + known_keys() + ")");
    read_field(*f, v, o);
  }
  return o;
}

std::string overrides_json(const ChatOverrides& o) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& f : kFields) {
    if (!is_set(f, o)) continue;
    const std::string key(f.key);
    switch (f.kind) {
      case Kind::kStrategy:
        j[key] = std::string(to_string(*o.strategy));
        break;
      case Kind::kCount:
        j[key] = *(o.*f.count);
        break;
      case Kind::kShare:
        j[key] = *(o.*f.share);
        break;
      case Kind::kTools:
        j[key] = *o.tools;
        break;
      case Kind::kModel:
        j[key] = *o.model;
        break;
    }
  }
  return j.dump();
}

ChatOverrides merge(ChatOverrides base, const ChatOverrides& more) {
  for (const auto& f : kFields) copy_if_set(f, more, base);
  return base;
}

ContextPolicy apply(ContextPolicy p, const ChatOverrides& o) {
  for (const auto& f : kFields) {
    if (!is_set(f, o)) continue;
    switch (f.kind) {
      case Kind::kStrategy:
        p.strategy = *o.strategy;
        break;
      case Kind::kCount:
        p.*f.policy_count = *(o.*f.count);
        break;
      case Kind::kShare:
        p.thresholds.*f.policy_share = *(o.*f.share);
        break;
      case Kind::kTools:
        p.tools = o.tools;
        break;
      case Kind::kModel:
        p.model = o.model;
        break;
    }
  }
  return p;
}

void validate(const ContextPolicy& p) {
  for (const auto& f : kFields) {
    if (f.kind != Kind::kCount) continue;
    const int64_t v = p.*f.policy_count;
    if (v < 1 || v > f.max)
      throw PolicyError(std::string(f.key),
                        std::to_string(v) + " is not from 1 to " + std::to_string(f.max));
  }
  const Thresholds& t = p.thresholds;
  const std::pair<std::string_view, double> shares[] = {
      {kKeyTarget, t.target}, {kKeySoft, t.soft}, {kKeyWarn, t.warn}, {kKeyHard, t.hard}};
  for (const auto& [key, v] : shares)
    if (!(v > 0.0 && v <= 1.0)) throw PolicyError(std::string(key), show(v) + " is not in (0, 1]");
  const std::string order = " (need 0 < target <= soft <= warn <= hard <= 1; now target " +
                            show(t.target) + ", soft " + show(t.soft) + ", warn " + show(t.warn) +
                            ", hard " + show(t.hard) + ")";
  // Of two out of order, the one changed from its default is named (CONTEXT_SOFT_THRESHOLD=1e-300
  // is SOFT's fault, not TARGET's); when both or neither were changed, the lower one.
  const Thresholds d;
  const auto out_of_order = [&](std::string_view lower, double lower_v, double lower_d,
                                std::string_view upper, double upper_v, double upper_d) {
    const bool upper_changed = upper_v != upper_d;
    if (upper_changed && lower_v == lower_d)
      throw PolicyError(std::string(upper), "below " + std::string(lower) + order);
    throw PolicyError(std::string(lower), "above " + std::string(upper) + order);
  };
  if (t.target > t.soft) out_of_order(kKeyTarget, t.target, d.target, kKeySoft, t.soft, d.soft);
  if (t.soft > t.warn) out_of_order(kKeySoft, t.soft, d.soft, kKeyWarn, t.warn, d.warn);
  if (t.warn > t.hard) out_of_order(kKeyWarn, t.warn, d.warn, kKeyHard, t.hard, d.hard);
}

}  // namespace autonous::engine
