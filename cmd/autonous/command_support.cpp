#include "cmd/autonous/command_support.h"

#include <iterator>
#include <map>
#include <mutex>

#include <spdlog/spdlog.h>

#include "internal/engine/model_presets.h"
#include "internal/tokens/counter_factory.h"
#include "internal/tokens/hf_counter.h"
#include "internal/tokens/token_counter.h"

namespace autonous::cmd {

std::unique_ptr<backend::Session> open_database(const config::Config& config, bool for_reading) {
  return backend::open_session(config, backend::OpenOptions{true, for_reading});
}

namespace {

std::unique_ptr<tokens::TokenCounter> make_model_counter(const config::Config& config,
                                                         const std::string& setting,
                                                         const std::string& model) {
  try {
    const std::optional<engine::ModelPreset> preset = engine::find_preset(model);
    auto choice = tokens::make_token_counter(setting, model, config.tokenizer_data_dir,
                                             preset ? preset->tokenizer : std::string(),
                                             config.tokenizer_cache_dir);
    if (!choice.warning.empty()) spdlog::warn("token counter: {}", choice.warning);
    if (!choice.note.empty()) spdlog::debug("token counter: {}", choice.note);
    return std::move(choice.counter);
  } catch (const std::exception& e) {
    throw config::ConfigError("TOKEN_COUNTER", e.what());
  }
}

}  // namespace

std::unique_ptr<tokens::TokenCounter> make_counter(const config::Config& config,
                                                   const std::string& setting) {
  return make_model_counter(config, setting, config.openai_model);
}

const tokens::TokenCounter& token_counter_for(const config::Config& config,
                                              const std::string& model) {
  if (config.token_counter != "auto" || model == config.openai_model) return token_counter(config);
  // One counter per tokenizer, not per model name: gpt-4o, gpt-4.1 and o3 share one o200k table
  // (tens of MB each), and a model of OPENAI_MODEL's tokenizer uses its counter.
  const std::optional<engine::ModelPreset> preset = engine::find_preset(model);
  std::string tokenizer = preset ? preset->tokenizer : std::string();
  if (tokenizer.empty()) tokenizer = tokens::encoding_for_model(model).value_or("");
  if (tokenizer.empty())
    if (const tokens::HfFamily* family = tokens::hf_family_for_model(model))
      tokenizer = std::string(family->name);
  if (tokenizer.empty()) tokenizer = "estimate";
  const tokens::TokenCounter& configured = token_counter(config);
  if (tokenizer == configured.name()) return configured;
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<tokens::TokenCounter>> counters;
  const std::lock_guard lock(mu);
  auto& counter = counters[tokenizer];
  if (!counter) counter = make_model_counter(config, "auto", model);
  return *counter;
}

const tokens::TokenCounter& token_counter(const config::Config& config) {
  static const std::unique_ptr<tokens::TokenCounter> kCounter =
      make_counter(config, config.token_counter);
  return *kCounter;
}

engine::EngineSettings engine_settings(const config::Config& config) {
  return engine::engine_settings(config, token_counter(config));
}

std::string read_all(std::istream& in) {
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace autonous::cmd
