#include "internal/engine/context_chat.h"

#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "internal/engine/policy.h"

namespace autonous::engine {
namespace {

// The stored tool list alone: unset when the settings name none, an empty list (no tools) when
// the settings cannot be read or their list is bad.
ToolNames stored_tools(const std::string& settings_json) {
  const std::string_view key = "\"tools\"";
  if (settings_json.find(key) == std::string::npos) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(settings_json);
    if (j.is_object() && !j.contains("tools")) return std::nullopt;
    return parse_overrides(nlohmann::json{{"tools", j.at("tools")}}.dump()).tools;
  } catch (const std::exception&) {
    return std::vector<std::string>{};
  }
}

// The stored model alone: unset when the settings name none or a bad one.
std::optional<std::string> stored_model(const std::string& settings_json) {
  if (settings_json.find("\"model\"") == std::string::npos) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(settings_json);
    if (!j.is_object() || !j.contains("model")) return std::nullopt;
    return parse_overrides(nlohmann::json{{"model", j.at("model")}}.dump()).model;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

ResolvedChat resolve(const ContextSettings& settings, const ChatState& stored,
                     const tokens::TokenCounter& counter,
                     const std::function<void(const std::string&)>& on_model,
                     std::optional<ContextWarning>& warning) {
  ResolvedChat chat;
  chat.cleared_through = stored.cleared_through;
  chat.policy = settings.policy;
  bool own_model = false;
  try {
    // Most chats have no settings of their own: no JSON parse on that path.
    const ChatOverrides overrides =
        stored.settings_json == "{}" ? ChatOverrides{} : parse_overrides(stored.settings_json);
    if (overrides.model && *overrides.model != settings.model && on_model) {
      own_model = true;
      on_model(*overrides.model);  // its counter checks the budget below
    }
    if (!overrides.empty()) {
      ContextSettings own = settings;
      own.policy = effective_policy(settings, overrides);
      check_budget(own, counter);
      chat.policy = own.policy;
      chat.own_settings = true;
    }
  } catch (const PolicyError& e) {
    // Bad stored settings never stop a turn. A tool list is kept on its own, though: a chat
    // limited to some tools (or none) must not be offered every tool because another setting is
    // bad; a list that is bad itself offers none. So is the chat's model (a bad threshold must
    // not move a chat to another model), with its budget.
    chat.policy.tools = stored_tools(stored.settings_json);
    const std::optional<std::string> model = stored_model(stored.settings_json);
    if (model && *model != settings.model) {
      if (!own_model && on_model) on_model(*model);
      chat.policy.model = model;
      try {
        ChatOverrides only_model;
        only_model.model = model;
        chat.policy.max_tokens = effective_policy(settings, only_model).max_tokens;
      } catch (const PolicyError&) {
      }
    } else if (own_model) {
      on_model(settings.model);  // the environment's model, and its counter
    }
    warning =
        ContextWarning{"bad_chat_settings",
                       std::string("chat settings ignored, environment defaults used") +
                           (chat.policy.tools ? " (but the chat's tool list)" : "") +
                           (chat.policy.model ? " (but the chat's model)" : "") + ": " + e.what()};
  }
  chat.requested_strategy = chat.policy.strategy;
  chat.strategy = chat.policy.strategy;
  return chat;
}

}  // namespace

ChatStart start_chat(const ContextSettings& settings, ChatState stored,
                     const tokens::TokenCounter& counter, bool has_summary_store,
                     const std::function<void(const std::string&)>& on_model) {
  ChatStart out;
  std::optional<ContextWarning> bad_settings;
  out.chat = resolve(settings, stored, counter, on_model, bad_settings);
  out.chat.pins = std::move(stored.pins);
  out.chat.blocks = std::move(stored.blocks);
  out.chat.custom = std::move(stored.custom);
  if (bad_settings) out.warnings.push_back(*bad_settings);
  if (out.chat.strategy == Strategy::kSummarize && !has_summary_store) {
    out.chat.strategy = Strategy::kTokenBudget;
    out.warnings.push_back(
        {"summarize_unavailable",
         "the summarize strategy needs a summary store, which this engine has none of; "
         "token_budget used"});
  }
  // A state written before the chat's latest clear point belongs to the cleared context.
  out.state = stored.context;
  if (out.state.chain_start != stored.cleared_through)
    out.state = ContextState{.chain_start = stored.cleared_through,
                             .verbatim_after = stored.cleared_through};
  return out;
}

}  // namespace autonous::engine
