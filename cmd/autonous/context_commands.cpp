// `autonous context --chat ID [--text T]` (the dry run), `autonous context stats`,
// `autonous context limits [--clear]` and `autonous tokens`: what the engine would send, what it
// did, what endpoints taught it, and what a text costs.

#include <fstream>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cmd/autonous/command_support.h"
#include "cmd/autonous/commands.h"
#include "internal/backend/session.h"
#include "internal/common/text.h"
#include "internal/common/utf8.h"
#include "internal/engine/context_report.h"
#include "internal/engine/context_state_store.h"
#include "internal/engine/engine.h"
#include "internal/engine/engine_storage.h"
#include "internal/events/event_log.h"
#include "internal/events/event_stats.h"
#include "internal/tokens/scaled_counter.h"
#include "internal/tokens/token_counter.h"
#include "internal/tools/tools_file.h"
#include "internal/tools/toolset.h"

namespace autonous::cmd {
namespace {

struct ContextOptions {
  std::string chat_id;
  std::string text;
};

struct TokensOptions {
  std::optional<std::string> encoding;  // a TOKEN_COUNTER value; nullopt: the configured one
  std::string file = "-";               // "-": stdin
};

int run_context(const config::Config& config, const ContextOptions& options) {
  if (common::trim(options.chat_id).empty()) throw UsageError("--chat: must not be empty");
  const engine::EngineSettings settings = engine_settings(config);
  const auto db = open_database(config);
  std::unique_ptr<engine::EngineStorage> storage = db->engine_storage();
  // Counted as the worker counts: with the estimator's stored calibration when it calibrates.
  tokens::ScaledCounter counter(token_counter(config));
  if (config.token_calibration && counter.name() == "estimate") {
    const engine::Calibration c =
        storage->calibration(engine::endpoint_key(config.openai_base_url), config.openai_model);
    counter.set_scale(c.scale);
    counter.set_added(c.added);
  }
  // The worker's own wiring, without a summarizer: shows the summary in use, calls nothing.
  const engine::Engine engine(std::move(storage), settings, counter);
  engine::BuildOptions build;
  build.budget_cap = engine.learned_budget(config.openai_base_url, config.openai_model);
  // The tools' declarations take room as in the worker: TOOLS_FILE's HTTP tools (an MCP server's
  // tools are known only once it runs, and a dry run starts none: they count as offered, at no
  // cost). Without tools, history's tool units go as text, as the worker sends them.
  std::shared_ptr<const tools::Toolset> toolset;
  bool mcp = false;
  if (!config.tools_file.empty()) {
    try {
      tools::ToolsFile file = tools::load_tools_file(config.tools_file);
      mcp = !file.mcp_servers.empty();
      toolset = std::make_shared<const tools::Toolset>(std::move(file.tools));
    } catch (const tools::ToolsFileError& e) {
      throw config::ConfigError("TOOLS_FILE", e.what());
    }
  }
  build.declarations = [toolset, mcp, &counter](const engine::ToolNames& names) -> int64_t {
    const std::string offered = toolset ? toolset->offered(names) : std::string();
    const int64_t cost = offered.empty() ? 0 : counter.count_text(offered);
    return mcp && (!names || !names->empty()) ? std::max<int64_t>(cost, 1) : cost;
  };
  // A chat's own model: counted, calibrated and capped as the worker would (its use_chat_model).
  build.chat_model = [&config, &counter, &engine](const std::string& model) {
    counter.set_inner(token_counter_for(config, model));
    const engine::Calibration c = config.token_calibration && counter.name() == "estimate"
                                      ? engine.calibration(config.openai_base_url, model)
                                      : engine::Calibration{};
    counter.set_scale(c.scale);
    counter.set_added(c.added);
    return std::optional<engine::ModelCaps>(
        engine::ModelCaps{engine.learned_budget(config.openai_base_url, model), std::nullopt});
  };
  std::cout << engine::dry_run_json(engine.build(options.chat_id, options.text, build)) << "\n";
  return 0;
}

int run_context_limits(const config::Config& config, bool clear) {
  if (clear) {
    const auto db = open_database(config);
    int64_t forgot = 0;
    db->write([&] { forgot = db->chats().forget_limits(); });
    std::cout << "forgot " << forgot << " learned limit(s)\n";
    return 0;
  }
  const auto rows = open_database(config, /*for_reading=*/true)->chats().learned_limits();
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& r : rows)
    out.push_back({{"endpoint", r.endpoint},
                   {"model", r.model},
                   {"budget_tokens", r.limit.budget_tokens},
                   {"stated_limit",
                    r.limit.stated_limit ? nlohmann::ordered_json(*r.limit.stated_limit) : nullptr},
                   {"learned_at", r.limit.learned_at},
                   {"message", r.limit.message}});
  // The server's words may hold C1 controls: escaped, as `status` does, for the terminal.
  std::cout << events::escape_c1(
                   out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace))
            << "\n";
  return 0;
}

void add_context_limits(CLI::App& context, Action& action) {
  auto clear = std::make_shared<bool>(false);
  auto* limits = context.add_subcommand(
      "limits", "The prompt budgets learned from endpoints' context-overflow answers, as JSON");
  limits->add_flag("--clear", *clear, "forget them all (after a server's window grew)");
  limits->callback([&action, clear] {
    action = [clear](const config::Config& c) { return run_context_limits(c, *clear); };
  });
}

int run_context_stats(const config::Config& config, const events::StatsFilter& filter) {
  const auto db = open_database(config, /*for_reading=*/true);
  std::cout << events::context_stats_json(db->events().compression_stats(filter),
                                          db->events().estimate_stats(filter),
                                          db->events().cost_stats(filter))
            << "\n";
  return 0;
}

int run_tokens(const config::Config& config, const TokensOptions& options) {
  std::string text;
  if (options.file == "-") {
    text = read_all(std::cin);
  } else {
    std::ifstream in(options.file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + options.file);
    text = read_all(in);
  }
  const auto counter = make_counter(config, options.encoding.value_or(config.token_counter));
  nlohmann::ordered_json j;
  j["encoding"] = std::string(counter->name());
  // Text only, no chat framing: what tiktoken's encode_ordinary returns. Invalid UTF-8 counts
  // as U+FFFD, one per maximal invalid sequence.
  j["tokens"] = counter->count_text(common::sanitize_utf8(text));
  j["bytes"] = text.size();
  std::cout << j.dump() << "\n";
  return 0;
}

void add_context_stats(CLI::App& context, Action& action) {
  auto filter = std::make_shared<events::StatsFilter>();
  auto chat = std::make_shared<std::string>();
  auto since = std::make_shared<std::string>();
  auto* stats = context.add_subcommand(
      "stats", "Token estimate vs the API's prompt_tokens, per model and counter, from events");
  auto* chat_opt = stats->add_option("--chat", *chat, "only this chat");
  auto* since_opt = stats->add_option("--since", *since,
                                      "only events at or after this UTC time, e.g. 2026-11-01");
  stats->callback([&action, filter, chat, since, chat_opt, since_opt] {
    if (chat_opt->count() > 0) filter->chat_id = *chat;
    if (since_opt->count() > 0) filter->since = *since;
    action = [filter](const config::Config& c) { return run_context_stats(c, *filter); };
  });
}

}  // namespace

void add_context_command(CLI::App& app, Action& action) {
  auto ctx = std::make_shared<ContextOptions>();
  auto* context = app.add_subcommand(
      "context", "Dry run: print as JSON the messages the worker would send now, and the figures");
  auto* chat_opt = context->add_option("--chat", ctx->chat_id, "chat id (required without stats)");
  context->add_option("--text", ctx->text, "the user message to assume (default: none)");
  add_context_stats(*context, action);
  add_context_limits(*context, action);
  context->callback([&action, ctx, chat_opt, context] {
    if (context->get_subcommand("stats")->parsed() || context->get_subcommand("limits")->parsed())
      return;
    if (chat_opt->count() == 0) throw CLI::RequiredError("--chat");
    action = [ctx](const config::Config& c) { return run_context(c, *ctx); };
  });
}

void add_tokens_command(CLI::App& app, Action& action) {
  auto tok = std::make_shared<TokensOptions>();
  auto encoding = std::make_shared<std::string>();
  auto* tokens = app.add_subcommand(
      "tokens", "Count the tokens of a text: prints {\"encoding\", \"tokens\", \"bytes\"}");
  auto* enc_opt =
      tokens
          ->add_option(
              "--encoding", *encoding,
              "auto, cl100k_base, o200k_base, llama3, qwen3, deepseek_v3, estimate or chars4 "
              "(default: TOKEN_COUNTER)")
          ->check(CLI::IsMember({"auto", "cl100k_base", "o200k_base", "llama3", "qwen3",
                                 "deepseek_v3", "estimate", "chars4"}));
  tokens->add_option("FILE", tok->file, "file to count, or - for stdin (default)");
  tokens->callback([&action, tok, encoding, enc_opt] {
    if (enc_opt->count() > 0) tok->encoding = *encoding;
    action = [tok](const config::Config& c) { return run_tokens(c, *tok); };
  });
}

}  // namespace autonous::cmd
