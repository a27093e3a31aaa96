// `autonous chat`: a chat's own context settings (chat_settings) and its clear point.
// `set` validates the merged settings exactly as the worker will use them and writes nothing
// when they are bad (exit 2, naming the flag).

#include <iostream>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include "internal/common/text.h"
#include "internal/db/write_transaction.h"
#include <nlohmann/json.hpp>

#include "cmd/autonous/command_support.h"
#include "cmd/autonous/commands.h"
#include "internal/store/chat_settings_store.h"
#include "internal/context/policy.h"
#include "internal/store/sqlite_provider.h"
#include "internal/tokens/token_counter.h"
#include "internal/events/event_log.h"
#include "internal/events/event_types.h"

namespace autonous::cmd {
namespace {

using nlohmann::ordered_json;

std::string require_chat(const ChatOptions& options) {
  const std::string id = common::trim(options.chat_id);
  if (id.empty()) throw UsageError("ID: the chat id must not be empty");
  if (options.chat_id.size() > 256) throw UsageError("ID: a chat id has at most 256 bytes");
  return options.chat_id;
}

context::ChatState state_of(SQLite::Database& db, const std::string& chat) {
  return store::SQLiteProvider(db).chat_state(chat);
}

const char* flag_for(const std::string& field) {
  if (field == context::kKeyStrategy) return "--strategy";
  if (field == context::kKeyMaxTokens) return "--max-tokens";
  if (field == context::kKeyRecent) return "--recent";
  if (field == context::kKeySoft) return "--soft";
  if (field == context::kKeyWarn) return "--warn";
  if (field == context::kKeyHard) return "--hard";
  if (field == context::kKeyTarget) return "--target";
  return "settings";
}

// The stored overrides, or none (with a note) when the stored row is not valid.
context::ChatOverrides stored_overrides(const context::ChatState& state, const std::string& chat) {
  try {
    return context::parse_overrides(state.settings_json);
  } catch (const context::PolicyError& e) {
    std::cerr << "autonous: chat " << chat << ": stored settings are not valid and are ignored ("
              << e.what() << ")\n";
    return {};
  }
}

ordered_json describe(const config::Config& config, const std::string& chat,
                      const context::ChatState& state, const context::ChatOverrides& own) {
  const worker::EngineConfig env = engine(config);
  context::ContextPolicy effective = context::apply(env.settings.policy, own);
  if (env.settings.ceiling > 0)
    effective.max_tokens = std::min(effective.max_tokens, env.settings.ceiling);
  auto from = [](bool chat_value) { return chat_value ? "chat" : "env"; };
  ordered_json j;
  j["chat_id"] = chat;
  j["settings"] = ordered_json::parse(context::overrides_json(own));
  j["effective"] = {
      {"strategy", {{"value", context::to_string(effective.strategy)},
                    {"from", from(own.strategy.has_value())}}},
      {"max_tokens",
       {{"value", effective.max_tokens},
        {"from", own.max_tokens ? std::string("chat") : "env (" + env.budget.source + ")"}}},
      {"recent_messages",
       {{"value", effective.recent_messages}, {"from", from(own.recent_messages.has_value())}}},
      {"soft", {{"value", effective.thresholds.soft}, {"from", from(own.soft.has_value())}}},
      {"warn", {{"value", effective.thresholds.warn}, {"from", from(own.warn.has_value())}}},
      {"hard", {{"value", effective.thresholds.hard}, {"from", from(own.hard.has_value())}}},
      {"target", {{"value", effective.thresholds.target}, {"from", from(own.target.has_value())}}}};
  j["model"] = config.openai_model;
  j["window"] = env.budget.window;
  j["reserve"] = env.budget.reserve;
  j["cleared_through"] = state.cleared_through;
  return j;
}

void record(SQLite::Database& db, std::string_view type, const std::string& chat,
            const ordered_json& payload) {
  events::Event e;
  e.type = std::string(type);
  e.chat_id = chat;
  e.payload = payload.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  events::append(db, e);
}

}  // namespace

int run_chat_show(const config::Config& config, const ChatOptions& options) {
  const std::string chat = require_chat(options);
  auto db = open_db(config);
  const context::ChatState state = state_of(*db, chat);
  std::cout << describe(config, chat, state, stored_overrides(state, chat)).dump(2) << "\n";
  return 0;
}

int run_chat_set(const config::Config& config, const ChatOptions& options) {
  const std::string chat = require_chat(options);
  context::ChatOverrides given = options.values;
  if (options.strategy) {
    given.strategy = context::parse_strategy(*options.strategy);
    if (!given.strategy)
      throw UsageError("--strategy: '" + *options.strategy +
                       "' is not one of sliding_window, token_budget, summarize");
  }
  if (given.empty())
    throw UsageError(
        "chat set: give at least one of --strategy, --max-tokens, --recent, --soft, --warn, "
        "--hard, --target");

  const worker::EngineConfig env = engine(config);
  auto db = open_db(config);
  const context::ChatState state = state_of(*db, chat);
  const context::ChatOverrides merged = context::merge(stored_overrides(state, chat), given);
  // Validate exactly what the worker will use: the environment's defaults under these.
  context::ContextSettings own = env.settings;
  own.policy = context::apply(env.settings.policy, merged);
  try {
    // Round-trip through JSON, so what is stored is what was checked.
    (void)context::parse_overrides(context::overrides_json(merged));
    if (merged.max_tokens && env.settings.ceiling > 0 && *merged.max_tokens > env.settings.ceiling)
      throw context::PolicyError(std::string(context::kKeyMaxTokens),
                                 std::to_string(*merged.max_tokens) +
                                     " is above the model's window - reserve (" +
                                     std::to_string(env.settings.ceiling) + " for " +
                                     config.openai_model + ")");
    context::check_budget(own, token_counter(config));
    if (own.policy.strategy == context::Strategy::kSummarize &&
        own.summary.max_tokens * 2 > std::min(own.policy.max_tokens,
                                              env.settings.ceiling > 0 ? env.settings.ceiling
                                                                       : own.policy.max_tokens))
      throw context::PolicyError(
          std::string(context::kKeyMaxTokens),
          "summarize needs a budget of at least twice SUMMARY_MAX_TOKENS (" +
              std::to_string(own.summary.max_tokens * 2) + ")");
  } catch (const context::PolicyError& e) {
    throw UsageError(std::string(flag_for(e.field())) + ": " + e.what() + "; nothing written");
  }
  const std::string json = context::overrides_json(merged);
  {
    db::WriteTransaction tx(*db);
    store::save_overrides(*db, chat, json);
    record(*db, events::kChatSettings, chat,
           {{"action", "set"},
            {"settings", ordered_json::parse(json)},
            {"previous", ordered_json::parse(context::overrides_json(stored_overrides(state, chat)))}});
    tx.commit();
  }
  const context::ChatState now = state_of(*db, chat);
  std::cout << describe(config, chat, now, merged).dump(2) << "\n";
  return 0;
}

int run_chat_reset(const config::Config& config, const ChatOptions& options) {
  const std::string chat = require_chat(options);
  auto db = open_db(config);
  db::WriteTransaction tx(*db);
  const context::ChatState state = state_of(*db, chat);
  const bool had = store::reset_overrides(*db, chat);
  if (had) {
    ordered_json previous = ordered_json::parse(state.settings_json, nullptr, false);
    if (previous.is_discarded()) previous = state.settings_json;  // a hand-written bad row
    record(*db, events::kChatSettings, chat,
           {{"action", "reset"}, {"settings", ordered_json::object()}, {"previous", previous}});
  }
  tx.commit();
  std::cout << "chat " << chat
            << (had ? ": settings reset to the environment's defaults\n"
                    : ": had no settings of its own; nothing to reset\n");
  return 0;
}

int run_chat_clear(const config::Config& config, const ChatOptions& options) {
  const std::string chat = require_chat(options);
  auto db = open_db(config);
  db::WriteTransaction tx(*db);
  const int64_t through = store::clear_context(*db, chat);
  record(*db, events::kChatCleared, chat, {{"cleared_through", through}});
  tx.commit();
  std::cout << "chat " << chat << ": the context starts fresh after history id " << through
            << " (stored history is kept)\n";
  return 0;
}

}  // namespace autonous::cmd
