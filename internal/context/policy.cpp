#include "internal/context/policy.h"

#include <nlohmann/json.hpp>

namespace autonous::context {
namespace {

using nlohmann::json;

constexpr int64_t kMaxBudget = 100'000'000;
constexpr int kMaxRecent = 100'000;

std::string show(double v) {
  std::string s = json(v).dump();
  return s;
}

double read_share(const json& v, std::string_view key) {
  if (!v.is_number()) throw PolicyError(std::string(key), "must be a number between 0 and 1");
  const double d = v.get<double>();
  if (!(d > 0.0 && d <= 1.0))
    throw PolicyError(std::string(key), show(d) + " is not in (0, 1]");
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
    case Strategy::kSlidingWindow: return "sliding_window";
    case Strategy::kTokenBudget: return "token_budget";
    case Strategy::kSummarize: return "summarize";
  }
  return "token_budget";
}

std::string_view to_string(Level level) {
  switch (level) {
    case Level::kNone: return "none";
    case Level::kNormal: return "normal";
    case Level::kAggressive: return "aggressive";
    case Level::kEmergency: return "emergency";
  }
  return "none";
}

Level classify(double usage, const Thresholds& t) {
  if (usage >= t.hard) return Level::kEmergency;
  if (usage >= t.warn) return Level::kAggressive;
  if (usage >= t.soft) return Level::kNormal;
  return Level::kNone;
}

bool ChatOverrides::empty() const noexcept {
  return !strategy && !max_tokens && !recent_messages && !soft && !warn && !hard && !target;
}

ChatOverrides parse_overrides(std::string_view json_text) {
  const json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    throw PolicyError("settings", "not a JSON object");
  ChatOverrides o;
  for (const auto& [key, v] : j.items()) {
    if (key == kKeyStrategy) {
      const auto s = v.is_string() ? parse_strategy(v.get<std::string>()) : std::nullopt;
      if (!s)
        throw PolicyError(key, v.dump() + " is not one of sliding_window, token_budget, summarize");
      o.strategy = s;
    } else if (key == kKeyMaxTokens) {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > kMaxBudget)
        throw PolicyError(key, v.dump() + " is not an integer from 1 to " +
                                   std::to_string(kMaxBudget));
      o.max_tokens = v.get<int64_t>();
    } else if (key == kKeyRecent) {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > kMaxRecent)
        throw PolicyError(key, v.dump() + " is not an integer from 1 to " +
                                   std::to_string(kMaxRecent));
      o.recent_messages = v.get<int>();
    } else if (key == kKeySoft) {
      o.soft = read_share(v, key);
    } else if (key == kKeyWarn) {
      o.warn = read_share(v, key);
    } else if (key == kKeyHard) {
      o.hard = read_share(v, key);
    } else if (key == kKeyTarget) {
      o.target = read_share(v, key);
    } else {
      throw PolicyError(key, "unknown setting (known: strategy, max_tokens, recent_messages, "
                             "soft, warn, hard, target)");
    }
  }
  return o;
}

std::string overrides_json(const ChatOverrides& o) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (o.strategy) j[std::string(kKeyStrategy)] = std::string(to_string(*o.strategy));
  if (o.max_tokens) j[std::string(kKeyMaxTokens)] = *o.max_tokens;
  if (o.recent_messages) j[std::string(kKeyRecent)] = *o.recent_messages;
  if (o.soft) j[std::string(kKeySoft)] = *o.soft;
  if (o.warn) j[std::string(kKeyWarn)] = *o.warn;
  if (o.hard) j[std::string(kKeyHard)] = *o.hard;
  if (o.target) j[std::string(kKeyTarget)] = *o.target;
  return j.dump();
}

ChatOverrides merge(ChatOverrides base, const ChatOverrides& more) {
  if (more.strategy) base.strategy = more.strategy;
  if (more.max_tokens) base.max_tokens = more.max_tokens;
  if (more.recent_messages) base.recent_messages = more.recent_messages;
  if (more.soft) base.soft = more.soft;
  if (more.warn) base.warn = more.warn;
  if (more.hard) base.hard = more.hard;
  if (more.target) base.target = more.target;
  return base;
}

ContextPolicy apply(ContextPolicy p, const ChatOverrides& o) {
  if (o.strategy) p.strategy = *o.strategy;
  if (o.max_tokens) p.max_tokens = *o.max_tokens;
  if (o.recent_messages) p.recent_messages = *o.recent_messages;
  if (o.soft) p.thresholds.soft = *o.soft;
  if (o.warn) p.thresholds.warn = *o.warn;
  if (o.hard) p.thresholds.hard = *o.hard;
  if (o.target) p.thresholds.target = *o.target;
  return p;
}

void validate(const ContextPolicy& p) {
  if (p.max_tokens < 1 || p.max_tokens > kMaxBudget)
    throw PolicyError(std::string(kKeyMaxTokens), std::to_string(p.max_tokens) +
                                                      " is not from 1 to " +
                                                      std::to_string(kMaxBudget));
  if (p.recent_messages < 1 || p.recent_messages > kMaxRecent)
    throw PolicyError(std::string(kKeyRecent), std::to_string(p.recent_messages) +
                                                   " is not from 1 to " +
                                                   std::to_string(kMaxRecent));
  const Thresholds& t = p.thresholds;
  const std::pair<std::string_view, double> shares[] = {
      {kKeyTarget, t.target}, {kKeySoft, t.soft}, {kKeyWarn, t.warn}, {kKeyHard, t.hard}};
  for (const auto& [key, v] : shares)
    if (!(v > 0.0 && v <= 1.0)) throw PolicyError(std::string(key), show(v) + " is not in (0, 1]");
  const std::string order = " (need 0 < target <= soft <= warn <= hard <= 1; now target " +
                            show(t.target) + ", soft " + show(t.soft) + ", warn " + show(t.warn) +
                            ", hard " + show(t.hard) + ")";
  if (t.target > t.soft) throw PolicyError(std::string(kKeyTarget), "above soft" + order);
  if (t.soft > t.warn) throw PolicyError(std::string(kKeySoft), "above warn" + order);
  if (t.warn > t.hard) throw PolicyError(std::string(kKeyWarn), "above hard" + order);
}

}  // namespace autonous::context
