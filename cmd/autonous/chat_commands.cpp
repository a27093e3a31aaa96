// `autonous chat show|set|reset|clear ID`: a chat's own context settings (chat_settings) and
// its clear point; `chat pin ID TEXT` / `chat unpin ID PIN_ID`: its pinned facts (chat_pins). The
// settings' flags, names and checks come from the one table of policy fields (engine/policy.h).
// `set` validates the merged settings exactly as the worker will use them and writes nothing when
// they are bad (exit 2, naming the flag).

#include <algorithm>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cmd/autonous/command_support.h"
#include "cmd/autonous/commands.h"
#include "internal/backend/session.h"
#include "internal/common/text.h"
#include "internal/common/utf8.h"
#include "internal/engine/chat_settings_store.h"
#include "internal/engine/context_settings.h"
#include "internal/engine/engine.h"
#include "internal/events/event_log.h"
#include "internal/events/event_stats.h"
#include "internal/events/event_types.h"
#include "internal/tools/tools_file.h"

namespace autonous::cmd {
namespace {

using nlohmann::ordered_json;

struct ChatOptions {
  std::string chat_id;
  std::optional<std::string> strategy;  // parsed (and refused when unknown) by `chat set`
  std::optional<std::string> tools;     // `--tools a,b` or none, parsed by `chat set`
  std::optional<std::string> model;     // `--model M`, or default (OPENAI_MODEL again)
  engine::ChatOverrides values;         // every other policy field
  std::string pin_text;                 // `chat pin`
  int64_t pin_id = 0;                   // `chat unpin`
};

std::string require_chat(const ChatOptions& options) {
  const std::string id = common::trim(options.chat_id);
  if (id.empty()) throw UsageError("ID: the chat id must not be empty");
  if (options.chat_id.size() > 256) throw UsageError("ID: a chat id has at most 256 bytes");
  return options.chat_id;
}

std::string flag_for(const std::string& field) {
  const engine::PolicyField* f = engine::find_policy_field(field);
  return f != nullptr ? std::string(f->flag) : "settings";
}

// The stored overrides, or none (with a note) when the stored row is not valid.
engine::ChatOverrides stored_overrides(const engine::ChatState& state, const std::string& chat) {
  try {
    return engine::parse_overrides(state.settings_json);
  } catch (const engine::PolicyError& e) {
    std::cerr << "autonous: chat " << chat << ": stored settings are not valid and are ignored ("
              << e.what() << ")\n";
    return {};
  }
}

ordered_json effective_value(const engine::PolicyField& f, const engine::ContextPolicy& p) {
  switch (f.kind) {
    case engine::PolicyField::Kind::kStrategy:
      return engine::to_string(p.strategy);
    case engine::PolicyField::Kind::kCount:
      return p.*f.policy_count;
    case engine::PolicyField::Kind::kShare:
      return p.thresholds.*f.policy_share;
    case engine::PolicyField::Kind::kTools:
      return p.tools ? ordered_json(*p.tools) : ordered_json("every tool TOOLS_FILE declares");
    case engine::PolicyField::Kind::kModel:
      return p.model ? ordered_json(*p.model) : ordered_json(nullptr);
  }
  return nullptr;
}

ordered_json describe(const config::Config& config, const std::string& chat,
                      const engine::ChatState& state, const engine::ChatOverrides& own) {
  const engine::EngineSettings env = engine_settings(config);
  engine::ContextPolicy effective = engine::effective_policy(env.context, own);
  if (!effective.model) effective.model = config.openai_model;
  const ordered_json set = ordered_json::parse(engine::overrides_json(own));
  ordered_json fields = ordered_json::object();
  for (const auto& f : engine::policy_fields()) {
    const std::string key(f.key);
    std::string from = set.contains(key) ? "chat" : "env";
    if (f.key == engine::kKeyMaxTokens && from == "env") {
      if (own.model && *own.model != config.openai_model)
        from = "model " + *own.model + " (" + engine::model_budget(env.context, own.model).source +
               ")";
      else
        from += " (" + env.budget.source + ")";
    }
    fields[key] = {{"value", effective_value(f, effective)}, {"from", from}};
  }
  ordered_json j;
  j["chat_id"] = chat;
  j["settings"] = set;
  j["effective"] = std::move(fields);
  // The chat's model (its own, or OPENAI_MODEL) and that model's window and reply room.
  const engine::PromptBudget budget =
      own.model ? engine::model_budget(env.context, own.model) : env.budget;
  j["model"] = *effective.model;
  j["window"] = own.model && *own.model != config.openai_model ? budget.window : env.budget.window;
  j["reserve"] =
      own.model && *own.model != config.openai_model ? budget.reserve : env.budget.reserve;
  j["cleared_through"] = state.cleared_through;
  return j;
}

ordered_json pins_json(backend::Session& db, const std::string& chat) {
  ordered_json pins = ordered_json::array();
  for (const engine::Pin& p : db.chats().pins(chat))
    pins.push_back({{"id", p.id}, {"text", p.text}, {"created_at", p.created_at}});
  return pins;
}

void record(backend::Session& db, std::string_view type, const std::string& chat,
            const ordered_json& payload) {
  events::Event e;
  e.type = std::string(type);
  e.chat_id = chat;
  e.payload = payload.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  db.events().append(e);
}

// A list of tools TOOLS_FILE does not declare is refused when the file names no MCP server (an
// MCP server's tools are known only once it runs: those names are taken as given).
void check_tool_names(const config::Config& config, const engine::ToolNames& names) {
  if (!names || names->empty() || config.tools_file.empty()) return;
  tools::ToolsFile file;
  try {
    file = tools::load_tools_file(config.tools_file);
  } catch (const tools::ToolsFileError& e) {
    throw UsageError(std::string("--tools: TOOLS_FILE: ") + e.what() + "; nothing written");
  }
  if (!file.mcp_servers.empty()) return;
  std::string declared;
  for (const tools::HttpTool& t : file.tools) declared += (declared.empty() ? "" : ", ") + t.name;
  for (const std::string& name : *names) {
    const bool known = std::any_of(file.tools.begin(), file.tools.end(),
                                   [&](const tools::HttpTool& t) { return t.name == name; });
    if (!known)
      throw UsageError("--tools: TOOLS_FILE declares no tool \"" + name + "\" (it declares: " +
                       (declared.empty() ? "none" : declared) + "); nothing written");
  }
}

// Throws UsageError naming the flag when `merged` is not what the worker could use.
void check_settings(const config::Config& config, const engine::EngineSettings& env,
                    const engine::ChatOverrides& merged) {
  try {
    // Round-trip through JSON, so what is stored is what was checked.
    (void)engine::parse_overrides(engine::overrides_json(merged));
    // The chat's model (its own, or OPENAI_MODEL) gives the ceiling and the counter.
    const std::string model = merged.model.value_or(config.openai_model);
    const int64_t ceiling = engine::model_budget(env.context, merged.model).ceiling;
    if (merged.max_tokens && ceiling > 0 && *merged.max_tokens > ceiling)
      throw engine::PolicyError(std::string(engine::kKeyMaxTokens),
                                std::to_string(*merged.max_tokens) +
                                    " is above the model's window - reserve (" +
                                    std::to_string(ceiling) + " for " + model + ")");
    engine::ContextSettings own = env.context;
    own.policy = engine::effective_policy(env.context, merged);
    engine::check_budget(own, token_counter_for(config, model));
    engine::check_summary_room(own);
  } catch (const engine::PolicyError& e) {
    // The budget the chat's model brought (no --max-tokens of its own) is --model's doing.
    const bool by_model = e.field() == engine::kKeyMaxTokens && merged.model && !merged.max_tokens;
    throw UsageError((by_model ? std::string("--model") : flag_for(e.field())) + ": " + e.what() +
                     "; nothing written");
  }
}

int run_chat_show(const config::Config& config, const ChatOptions& options) {
  const std::string chat = require_chat(options);
  const auto db = open_database(config);
  const engine::ChatState state = db->chats().chat_state(chat);
  ordered_json j = describe(config, chat, state, stored_overrides(state, chat));
  j["pins"] = pins_json(*db, chat);
  // What the chat's LLM calls have cost so far (its llm.response events, #31).
  events::StatsFilter only_chat;
  only_chat.chat_id = chat;
  j["cost"] = events::cost_json(db->events().cost_stats(only_chat));
  std::cout << j.dump(2, ' ', false, ordered_json::error_handler_t::replace) << "\n";
  return 0;
}

int run_chat_pin(const config::Config& config, const ChatOptions& options) {
  const std::string chat = require_chat(options);
  if (common::trim(options.pin_text).empty()) throw UsageError("TEXT: the fact must not be empty");
  if (options.pin_text.size() > 4000)
    throw UsageError("TEXT: a pinned fact has at most 4000 bytes");
  const std::string text = common::sanitize_utf8(common::trim(options.pin_text));
  const auto db = open_database(config);
  int64_t id = 0;
  db->write([&] {
    id = db->chats().add_pin(chat, text);
    record(*db, events::kChatSettings, chat, {{"action", "pin"}, {"pin_id", id}, {"text", text}});
  });
  std::cout << id << "\n";
  return 0;
}

int run_chat_unpin(const config::Config& config, const ChatOptions& options) {
  const std::string chat = require_chat(options);
  const auto db = open_database(config);
  db->write([&] {
    if (!db->chats().remove_pin(chat, options.pin_id))
      throw UsageError("PIN_ID: chat " + chat + " has no pin " + std::to_string(options.pin_id) +
                       " (`autonous chat show " + chat + "` lists them)");
    record(*db, events::kChatSettings, chat, {{"action", "unpin"}, {"pin_id", options.pin_id}});
  });
  std::cout << "chat " << chat << ": pin " << options.pin_id << " removed\n";
  return 0;
}

int run_chat_set(const config::Config& config, const ChatOptions& options) {
  const std::string chat = require_chat(options);
  engine::ChatOverrides given = options.values;
  if (options.strategy) {
    given.strategy = engine::parse_strategy(*options.strategy);
    if (!given.strategy)
      throw UsageError("--strategy: '" + *options.strategy +
                       "' is not one of sliding_window, token_budget, summarize");
  }
  // `--tools all`: the chat's list goes, every declared tool is offered again.
  const bool all_tools = options.tools && common::trim(*options.tools) == "all";
  if (options.tools && !all_tools) {
    try {
      given.tools = engine::parse_tool_list(*options.tools);
    } catch (const engine::PolicyError& e) {
      throw UsageError(std::string("--tools: ") + e.what() + "; nothing written");
    }
  }
  // `--model default`: the chat's model goes, OPENAI_MODEL answers again.
  const bool default_model =
      options.model && common::to_lower_ascii(common::trim(*options.model)) == "default";
  if (options.model && !default_model) {
    const std::string m = common::trim(*options.model);
    if (!engine::valid_model_name(m))
      throw UsageError("--model: '" + common::sanitize_utf8(m.substr(0, 200)) +
                       "' is not a model name (1 to 200 printable characters, no spaces); "
                       "nothing written");
    // Azure's classic URL names the deployment, which picks the model: the request's is ignored.
    if (common::to_lower_ascii(config.openai_base_url).find("/openai/deployments/") !=
        std::string::npos)
      throw UsageError(
          "--model: OPENAI_BASE_URL is an Azure OpenAI deployment, which picks the model itself "
          "(the request's model is ignored); use Azure's v1 API (…/openai/v1) for a chat's own "
          "model; nothing written");
    const std::optional<engine::ModelPreset> preset = engine::find_preset(m);
    if (preset && preset->window == 0)
      throw UsageError("--model: '" + m +
                       "' is an embeddings model, not a chat model; nothing "
                       "written");
    if (!preset)
      std::cerr << "autonous: note: no preset knows model '" << m
                << "': its budget is MAX_CONTEXT_TOKENS or " << engine::kUnknownModelBudget
                << " tokens (give it a window in MODELS_FILE)\n";
    given.model = m;
  }
  if (given.empty() && !all_tools && !default_model) {
    std::string flags;
    for (const auto& f : engine::policy_fields())
      flags += (flags.empty() ? "" : ", ") + std::string(f.flag);
    throw UsageError("chat set: give at least one of " + flags);
  }
  const engine::EngineSettings env = engine_settings(config);
  const auto db = open_database(config);
  const engine::ChatState state = db->chats().chat_state(chat);
  const engine::ChatOverrides previous = stored_overrides(state, chat);
  engine::ChatOverrides merged = engine::merge(previous, given);
  if (all_tools) merged.tools.reset();
  if (default_model) merged.model.reset();
  check_settings(config, env, merged);
  check_tool_names(config, given.tools);
  const std::string json = engine::overrides_json(merged);
  db->write([&] {
    db->chats().save_overrides(chat, json);
    record(*db, events::kChatSettings, chat,
           {{"action", "set"},
            {"settings", ordered_json::parse(json)},
            {"previous", ordered_json::parse(engine::overrides_json(previous))}});
  });
  std::cout << describe(config, chat, db->chats().chat_state(chat), merged).dump(2) << "\n";
  return 0;
}

int run_chat_reset(const config::Config& config, const ChatOptions& options) {
  const std::string chat = require_chat(options);
  const auto db = open_database(config);
  bool had = false;
  db->write([&] {
    const engine::ChatState state = db->chats().chat_state(chat);
    had = db->chats().reset_overrides(chat);
    if (had) {
      ordered_json previous = ordered_json::parse(state.settings_json, nullptr, false);
      if (previous.is_discarded()) previous = state.settings_json;  // a hand-written bad row
      record(*db, events::kChatSettings, chat,
             {{"action", "reset"}, {"settings", ordered_json::object()}, {"previous", previous}});
    }
  });
  std::cout << "chat " << chat
            << (had ? ": settings reset to the environment's defaults\n"
                    : ": had no settings of its own; nothing to reset\n");
  return 0;
}

int run_chat_clear(const config::Config& config, const ChatOptions& options) {
  const std::string chat = require_chat(options);
  const auto db = open_database(config);
  int64_t through = 0;
  db->write([&] {
    through = db->chats().clear_context(chat);
    record(*db, events::kChatCleared, chat, {{"cleared_through", through}});
  });
  std::cout << "chat " << chat << ": the context starts fresh after history id " << through
            << " (stored history is kept)\n";
  return 0;
}

// `chat set`'s flags, one per policy field.
void add_setting_flags(CLI::App& set, ChatOptions& options) {
  for (const auto& f : engine::policy_fields()) {
    const std::string flag(f.flag);
    const std::string help(f.help);
    switch (f.kind) {
      case engine::PolicyField::Kind::kStrategy:
        set.add_option(flag, options.strategy, help);
        break;
      case engine::PolicyField::Kind::kCount:
        set.add_option(flag, options.values.*f.count, help);
        break;
      case engine::PolicyField::Kind::kShare:
        set.add_option(flag, options.values.*f.share, help);
        break;
      case engine::PolicyField::Kind::kTools:
        set.add_option(flag, options.tools, help);
        break;
      case engine::PolicyField::Kind::kModel:
        set.add_option(flag, options.model, help + " (default: OPENAI_MODEL again)");
        break;
    }
  }
}

}  // namespace

void add_chat_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ChatOptions>();
  auto* chat = app.add_subcommand(
      "chat", "A chat's own context settings (over the environment's) and its clear point");
  chat->require_subcommand(1);
  using Run = int (*)(const config::Config&, const ChatOptions&);
  const std::pair<const char*, const char*> subs[] = {
      {"show", "Print the chat's settings, effective values and where each comes from (JSON)"},
      {"set", "Set the chat's own settings (validated; nothing is written when one is bad)"},
      {"reset", "Drop the chat's own settings: back to the environment's"},
      {"clear", "Start the chat's context fresh after this point; stored history is kept"},
      {"pin", "Pin a fact to the chat: every prompt of the chat carries it; prints its id"},
      {"unpin", "Remove one of the chat's pinned facts"}};
  const Run runs[] = {run_chat_show,  run_chat_set, run_chat_reset,
                      run_chat_clear, run_chat_pin, run_chat_unpin};
  for (size_t i = 0; i < std::size(subs); ++i) {
    auto* sub = chat->add_subcommand(subs[i].first, subs[i].second);
    sub->add_option("ID", options->chat_id, "chat id")->required();
    const std::string_view name = subs[i].first;
    if (name == "set") add_setting_flags(*sub, *options);
    if (name == "pin") sub->add_option("TEXT", options->pin_text, "the fact")->required();
    if (name == "unpin") sub->add_option("PIN_ID", options->pin_id, "the pin's id")->required();
    sub->callback([&action, options, run = runs[i]] {
      action = [options, run](const config::Config& c) { return run(c, *options); };
    });
  }
}

}  // namespace autonous::cmd
