#include "internal/engine/model_presets.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "internal/common/text.h"

namespace autonous::engine {
namespace {

using nlohmann::json;

std::string normalise(std::string_view model) {
  std::string s = common::to_lower_ascii(std::string(model));
  if (const auto slash = s.rfind('/'); slash != std::string::npos) s.erase(0, slash + 1);
  if (s.rfind("meta-", 0) == 0) s.erase(0, 5);
  // OpenRouter spells Claude's versions with a dot (claude-opus-4.5): Anthropic's id has a dash.
  if (s.rfind("claude-", 0) == 0) std::replace(s.begin(), s.end(), '.', '-');
  return s;
}

// A snapshot's date after a model's name: 2024-08-06, 20250514, 2411 or 0125; or "latest".
bool date_suffix(std::string_view s) {
  const auto digits = [](std::string_view d) {
    return !d.empty() &&
           std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (s == "latest") return true;
  if (s.size() == 10 && s[4] == '-' && s[7] == '-')
    return digits(s.substr(0, 4)) && digits(s.substr(5, 2)) && digits(s.substr(8, 2));
  return (s.size() == 8 || s.size() == 4) && digits(s);
}

constexpr int64_t kMaxWindow = 100'000'000;  // as MAX_CONTEXT_TOKENS' bound
constexpr double kMaxDollars = 10'000;       // per million tokens: a per-token figure's mistake

// The counters TOKEN_COUNTER names that a preset may pick (the estimate is `auto`'s fallback
// anyway, and chars4 is never right for a model).
bool known_counter(const std::string& name) {
  return name == "cl100k_base" || name == "o200k_base" || name == "llama3" || name == "qwen3" ||
         name == "deepseek_v3";
}

[[noreturn]] void refuse(const std::string& where, const std::string& why) {
  throw ModelsFileError(where + ": " + why);
}

int64_t whole_at(const json& e, const char* key, const std::string& where) {
  const json& v = e.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxWindow)
    refuse(where, std::string("\"") + key + "\" must be a whole number of tokens from 0 to " +
                      std::to_string(kMaxWindow));
  return v.get<int64_t>();
}

double dollars_at(const json& price, const char* key, const std::string& where) {
  const json& v = price.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
      v.get<double>() > kMaxDollars)
    refuse(where, std::string("\"price\".\"") + key +
                      "\" must be US dollars per million tokens, from 0 to 10000");
  return v.get<double>();
}

std::string text_at(const json& e, const char* key, const std::string& where) {
  if (!e.at(key).is_string()) refuse(where, std::string("\"") + key + "\" must be a string");
  return e.at(key).get<std::string>();
}

bool flag_at(const json& e, const char* key, const std::string& where) {
  if (!e.at(key).is_boolean()) refuse(where, std::string("\"") + key + "\" must be true or false");
  return e.at(key).get<bool>();
}

ModelPrice price_of(const json& p, const std::string& where) {
  if (!p.is_object()) refuse(where, "\"price\" must be an object (input, cached_input, output)");
  for (const auto& [key, value] : p.items())
    if (key != "input" && key != "cached_input" && key != "output" && key != "unit" &&
        key != "max_prompt_tokens")
      refuse(where, "\"price\" has an unknown field \"" + key + "\"");
  if (!p.contains("input") || !p.contains("output"))
    refuse(where, "\"price\" needs both \"input\" and \"output\"");
  if (p.contains("unit") && p.at("unit") != "usd_per_million_tokens")
    refuse(where, "\"price\".\"unit\" can only be \"usd_per_million_tokens\"");
  ModelPrice out;
  out.input = dollars_at(p, "input", where);
  out.output = dollars_at(p, "output", where);
  if (p.contains("cached_input")) out.cached_input = dollars_at(p, "cached_input", where);
  if (p.contains("max_prompt_tokens")) {
    const json& v = p.at("max_prompt_tokens");
    if (!v.is_number_integer() || v.get<int64_t>() < 1)
      refuse(where, "\"price\".\"max_prompt_tokens\" must be a whole number of tokens, 1 or more");
    out.max_prompt_tokens = v.get<int64_t>();
  }
  return out;
}

// One entry, its fields over `into` (a base entry, or a fresh one).
void read_entry(const json& e, const std::string& where, ModelPreset& into) {
  static const std::set<std::string> kEntryFields = {"match", "family", "window",    "reserve",
                                                     "shape", "exact",  "api_names", "tokenizer",
                                                     "price", "source", "note"};
  for (const auto& [key, value] : e.items())
    if (kEntryFields.count(key) == 0) refuse(where, "unknown field \"" + key + "\"");
  if (e.contains("family")) into.family = text_at(e, "family", where);
  if (e.contains("window")) into.window = whole_at(e, "window", where);
  if (e.contains("reserve")) into.reserve = whole_at(e, "reserve", where);
  if (e.contains("shape")) {
    const auto shape = parse_request_shape(text_at(e, "shape", where));
    if (!shape) refuse(where, "\"shape\" must be classic, openai, reasoning or bare");
    into.shape = *shape;
  }
  if (e.contains("api_names")) into.api_names = flag_at(e, "api_names", where);
  if (e.contains("tokenizer")) {
    into.tokenizer = text_at(e, "tokenizer", where);
    if (!into.tokenizer.empty() && !known_counter(into.tokenizer))
      refuse(where, "\"tokenizer\" must be cl100k_base, o200k_base, llama3, qwen3 or deepseek_v3");
  }
  if (e.contains("price")) {
    if (e.at("price").is_null())
      into.price.reset();
    else
      into.price = price_of(e.at("price"), where);
  }
  if (e.contains("source")) into.source = text_at(e, "source", where);
  if (into.window > 0 && into.reserve >= into.window)
    refuse(where, "\"reserve\" (" + std::to_string(into.reserve) +
                      ") leaves nothing of the window (" + std::to_string(into.window) + ")");
  if (into.window == 0 && !into.price)
    refuse(where, "an entry needs a \"window\" (a chat model) or a \"price\" (embeddings)");
}

std::mutex g_mu;
std::shared_ptr<const std::vector<ModelPreset>> g_presets;  // null: the shipped ones

std::shared_ptr<const std::vector<ModelPreset>> shipped() {
  static const auto kShipped =
      std::make_shared<const std::vector<ModelPreset>>(parse_models(shipped_models_json()));
  return kShipped;
}

}  // namespace

std::vector<ModelPreset> parse_models(std::string_view json_text,
                                      const std::vector<ModelPreset>& base) {
  const json doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded()) throw ModelsFileError("not valid JSON");
  if (!doc.is_object() || !doc.contains("models") || !doc.at("models").is_array())
    throw ModelsFileError("the file must be an object with a \"models\" array");
  std::vector<ModelPreset> out = base;
  std::set<std::pair<std::string, bool>> seen;  // (match, exact) in this file
  size_t i = 0;
  for (const json& e : doc.at("models")) {
    std::string where = "models[" + std::to_string(i++) + "]";
    if (!e.is_object()) refuse(where, "an entry must be an object");
    if (!e.contains("match") || !e.at("match").is_string() ||
        e.at("match").get<std::string>().empty())
      refuse(where, "\"match\" (the model name's start) is required");
    const std::string match = normalise(e.at("match").get<std::string>());
    if (match.empty())
      refuse(where,
             "\"match\" is empty once a provider prefix is left out (it would match every "
             "model)");
    where += " (" + match + ")";
    const bool exact = e.contains("exact") && flag_at(e, "exact", where);
    if (!seen.insert({match, exact}).second) refuse(where, "a second entry for the same \"match\"");
    const auto same = std::find_if(out.begin(), out.end(), [&](const ModelPreset& p) {
      return p.prefix == match && p.exact == exact;
    });
    if (same != out.end()) {
      read_entry(e, where, *same);
    } else {
      // What the name would get without this entry (a dated snapshot's family), its price and
      // source aside.
      ModelPreset fresh;
      const ModelPreset* like = nullptr;
      for (const ModelPreset& p : out)
        if (!p.exact && p.window > 0 && match.rfind(p.prefix, 0) == 0 &&
            (like == nullptr || p.prefix.size() > like->prefix.size()))
          like = &p;
      if (like != nullptr) {
        fresh = *like;
        fresh.price.reset();
        fresh.source.clear();
      }
      fresh.prefix = match;
      fresh.exact = exact;
      if (like == nullptr) fresh.family = match;
      read_entry(e, where, fresh);
      out.push_back(std::move(fresh));
    }
  }
  return out;
}

std::shared_ptr<const std::vector<ModelPreset>> model_presets() {
  const std::lock_guard lock(g_mu);
  return g_presets ? g_presets : shipped();
}

void install_models_file(const std::string& path) {
  if (path.empty()) {
    const std::lock_guard lock(g_mu);
    g_presets.reset();
    return;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelsFileError(path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  std::shared_ptr<const std::vector<ModelPreset>> presets;
  try {
    presets =
        std::make_shared<const std::vector<ModelPreset>>(parse_models(text.str(), *shipped()));
  } catch (const ModelsFileError& e) {
    throw ModelsFileError(path + ": " + e.what());
  }
  const std::lock_guard lock(g_mu);
  g_presets = std::move(presets);
}

std::optional<ModelPreset> find_preset(std::string_view model) {
  const auto presets = model_presets();
  const std::string name = normalise(model);
  for (const ModelPreset& p : *presets)
    if (p.exact && name == p.prefix) return p;
  const bool ollama_tag = name.find(':') != std::string::npos;
  const ModelPreset* best = nullptr;
  for (const ModelPreset& p : *presets) {
    if (p.exact || name.rfind(p.prefix, 0) != 0 || (p.api_names && ollama_tag)) continue;
    if (best == nullptr || p.prefix.size() > best->prefix.size()) best = &p;
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

bool price_applies(std::string_view model, const ModelPreset& preset) {
  const std::string name = normalise(model);
  if (name == preset.prefix) return true;
  if (preset.exact || name.size() <= preset.prefix.size() + 1 ||
      name.compare(0, preset.prefix.size(), preset.prefix) != 0 ||
      name[preset.prefix.size()] != '-')
    return false;
  return date_suffix(std::string_view(name).substr(preset.prefix.size() + 1));
}

std::optional<double> cost_usd(const ModelPrice& price, const common::Usage& usage) {
  const int64_t prompt = std::max<int64_t>(usage.prompt_tokens, 0);
  if (price.max_prompt_tokens && prompt > *price.max_prompt_tokens) return std::nullopt;
  const int64_t cached = std::clamp<int64_t>(usage.cached_tokens.value_or(0), 0, prompt);
  const int64_t completion = std::max<int64_t>(usage.completion_tokens, 0);
  if (cached > 0 && !price.cached_input) return std::nullopt;
  const double micro = static_cast<double>(prompt - cached) * price.input +
                       static_cast<double>(cached) * price.cached_input.value_or(0) +
                       static_cast<double>(completion) * price.output;
  return micro / 1e6;
}

std::optional<double> cost_usd(std::string_view model, const common::Usage& usage) {
  const std::optional<ModelPreset> preset = find_preset(model);
  if (!preset || !preset->price || !price_applies(model, *preset)) return std::nullopt;
  return cost_usd(*preset->price, usage);
}

std::string_view to_string(RequestShape shape) {
  switch (shape) {
    case RequestShape::kClassic:
      return "classic";
    case RequestShape::kOpenAI:
      return "openai";
    case RequestShape::kReasoning:
      return "reasoning";
    case RequestShape::kBare:
      return "bare";
  }
  return "classic";
}

std::optional<RequestShape> parse_request_shape(std::string_view name) {
  for (const auto shape : {RequestShape::kClassic, RequestShape::kOpenAI, RequestShape::kReasoning,
                           RequestShape::kBare})
    if (name == to_string(shape)) return shape;
  return std::nullopt;
}

RequestShape request_shape(std::string_view model) {
  const std::optional<ModelPreset> preset = find_preset(model);
  return preset ? preset->shape : RequestShape::kClassic;
}

PromptBudget resolve_prompt_budget(const BudgetInputs& in) {
  PromptBudget out;
  const std::optional<ModelPreset> found = find_preset(in.model);
  // An embeddings model's entry has no window: as unknown as no entry.
  const ModelPreset* preset = found && found->window > 0 ? &*found : nullptr;
  out.window = in.context_window.value_or(preset ? preset->window : 0);
  if (in.reserve_output) {
    out.reserve = *in.reserve_output;
  } else if (preset && !in.context_window) {
    out.reserve = preset->reserve;
  } else if (preset) {
    out.reserve = std::min(preset->reserve, out.window / 4);
  } else {
    out.reserve = out.window / 4;  // CONTEXT_WINDOW of an unknown model: a quarter for the reply
  }
  if (out.window > 0) {
    if (out.reserve >= out.window)
      throw std::invalid_argument("output reserve of " + std::to_string(out.reserve) +
                                  " tokens leaves nothing of a " + std::to_string(out.window) +
                                  "-token window");
    out.ceiling = out.window - out.reserve;
  }
  const std::string window_source =
      in.context_window ? std::string("CONTEXT_WINDOW")
                        : (preset ? "preset " + std::string(preset->prefix) : std::string());
  if (in.max_context_tokens) {
    out.tokens = *in.max_context_tokens;
    out.source = "MAX_CONTEXT_TOKENS";
    if (out.ceiling > 0 && out.tokens > out.ceiling) {
      out.tokens = out.ceiling;
      out.clamped = true;
      out.source = "MAX_CONTEXT_TOKENS, lowered to window - reserve (" + window_source + ")";
    }
  } else if (out.ceiling > 0) {
    out.tokens = out.ceiling;
    out.source = window_source;
  } else {
    out.tokens = kUnknownModelBudget;
    out.source = "default";
  }
  return out;
}

}  // namespace autonous::engine
