#include "internal/context/context_builder.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "internal/common/utf8.h"
#include "internal/context/assembler.h"
#include "internal/context/compressor.h"
#include "internal/context/provider.h"
#include "internal/context/token_counter.h"
#include "internal/context/truncate.h"

namespace autonous::context {
namespace {

int64_t system_cost(const ContextSettings& s, const TokenCounter& counter) {
  if (s.system_prompt.empty()) return 0;
  const common::Message system{common::Role::kSystem, common::sanitize_utf8(s.system_prompt), 0};
  return counter.count_message(system);
}

nlohmann::ordered_json figures(const BuiltContext& b) {
  return {{"original_count", b.original_count}, {"compressed_count", b.compressed_count},
          {"dropped_count", b.dropped_count},   {"truncated_count", b.truncated_count},
          {"user_truncated", b.user_truncated}, {"estimated_tokens", b.estimated_tokens},
          {"budget_tokens", b.budget_tokens},   {"system_tokens", b.system_tokens},
          {"user_tokens", b.user_tokens},       {"history_budget_tokens", b.history_budget_tokens},
          {"message_count", b.messages.size()}, {"token_counter", b.counter},
          {"build_us", b.build_time.count()}};
}

}  // namespace

void check_budget(const ContextSettings& settings, const TokenCounter& counter) {
  const int64_t fixed = counter.per_request() + system_cost(settings, counter) +
                        counter.per_message() + kMinUserTokens;
  if (settings.max_context_tokens < fixed)
    throw std::invalid_argument("budget of " + std::to_string(settings.max_context_tokens) +
                                " tokens cannot hold the system prompt and a user message (needs "
                                "at least " +
                                std::to_string(fixed) + ")");
}

ContextBuilder::ContextBuilder(ContextSettings settings, Provider& provider,
                               const Compressor& compressor, const Assembler& assembler,
                               const TokenCounter& counter)
    : settings_(std::move(settings)),
      provider_(provider),
      compressor_(compressor),
      assembler_(assembler),
      counter_(counter) {
  check_budget(settings_, counter_);
}

BuiltContext ContextBuilder::build(const std::string& chat_id, const std::string& user_text) const {
  const auto started = std::chrono::steady_clock::now();
  BuiltContext out;
  out.counter = std::string(counter_.name());
  out.budget_tokens = settings_.max_context_tokens;

  const common::Message system{common::Role::kSystem,
                               common::sanitize_utf8(settings_.system_prompt), 0};
  common::Message user{common::Role::kUser, common::sanitize_utf8(user_text), 0};
  out.system_tokens = system.content.empty() ? 0 : counter_.count_message(system);

  // What the user message may cost at most; check_budget() guaranteed kMinUserTokens of it.
  const int64_t user_room =
      settings_.max_context_tokens - counter_.per_request() - out.system_tokens;
  if (!user.content.empty()) {
    out.user_tokens = counter_.count_message(user);
    if (out.user_tokens > user_room) {
      user.content = cut_to_tokens(user.content, user_room - counter_.per_message(), counter_);
      out.user_truncated = true;
      out.user_tokens = user.content.empty() ? 0 : counter_.count_message(user);
    }
  }
  out.history_budget_tokens = user_room - out.user_tokens;

  std::vector<common::Message> history;
  if (settings_.history_window > 0)
    history = provider_.get_history(chat_id, settings_.history_window);
  out.original_count = static_cast<int64_t>(history.size());
  Compression kept = compressor_.compress(
      std::move(history), TokenBudget{out.history_budget_tokens, settings_.max_chars_per_message});
  out.compressed_count = static_cast<int64_t>(kept.messages.size());
  out.dropped_count = kept.dropped_count;
  out.truncated_count = kept.truncated_count;

  out.messages = assembler_.assemble(system, kept.messages, user);
  out.estimated_tokens = counter_.count_prompt(out.messages);
  out.build_time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  return out;
}

std::string figures_json(const BuiltContext& built) {
  return figures(built).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string dry_run_json(const BuiltContext& built) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (const auto& m : built.messages)
    messages.push_back({{"role", common::to_string(m.role)}, {"content", m.content}});
  nlohmann::ordered_json j;
  j["messages"] = std::move(messages);
  const nlohmann::ordered_json f = figures(built);  // a named object: items() refers into it
  for (const auto& [k, v] : f.items()) j[k] = v;
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace autonous::context
