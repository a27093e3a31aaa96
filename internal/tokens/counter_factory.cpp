#include "internal/tokens/counter_factory.h"

#include <stdexcept>

#include "internal/tokens/bpe_counter.h"
#include "internal/tokens/estimator.h"
#include "internal/tokens/hf_counter.h"
#include "internal/tokens/memo_counter.h"

namespace autonous::tokens {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

std::optional<std::string> encoding_for_model(const std::string& model) {
  // Prefixes as OpenAI's tiktoken model table has them (fine-tunes start with "ft:").
  std::string m = starts_with(model, "ft:") ? model.substr(3) : model;
  for (const char* p :
       {"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "gpt-oss"}) {
    if (starts_with(m, p)) return "o200k_base";
  }
  for (const char* p :
       {"gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada-002"}) {
    if (starts_with(m, p)) return "cl100k_base";
  }
  return std::nullopt;
}

namespace {

// The exact counter of an OpenAI encoding, saying in `out.note` where its tables came from.
std::unique_ptr<TokenCounter> bpe_counter(const std::string& encoding, const std::string& data_dir,
                                          const std::string& cache_dir, CounterChoice& out) {
  BpeRanks::CacheUse use;
  auto counter =
      std::make_unique<MemoCounter>(load_bpe_counter(encoding, data_dir, cache_dir, &use));
  if (use.hit)
    out.note = encoding + " tables mapped from " + use.file;
  else if (use.file.empty())
    out.note = encoding + " tables built (no TOKENIZER_CACHE_DIR)";
  else
    out.note = encoding + " tables built" + (use.refused.empty() ? "" : " (" + use.refused + ")") +
               (use.written ? " and cached in " + use.file
                            : "; not cached" + (use.error.empty() ? "" : ": " + use.error));
  return counter;
}

}  // namespace

CounterChoice make_token_counter(const std::string& setting, const std::string& model,
                                 const std::string& data_dir, const std::string& preset,
                                 const std::string& cache_dir) {
  CounterChoice out;
  if (setting == "chars4") {
    out.counter = std::make_unique<CharsOver4Counter>(kFramingPerMessage, kFramingPerRequest);
    return out;
  }
  if (setting == "estimate") {
    out.counter = std::make_unique<EstimateCounter>();
    return out;
  }
  if (setting == "cl100k_base" || setting == "o200k_base") {
    out.counter = bpe_counter(setting, data_dir, cache_dir, out);
    return out;
  }
  if (hf_family(setting) != nullptr) {
    out.counter = std::make_unique<MemoCounter>(load_hf_counter(setting, data_dir));
    return out;
  }
  if (setting != "auto") throw std::invalid_argument("unknown token counter '" + setting + "'");
  const bool preset_bpe = preset == "cl100k_base" || preset == "o200k_base";
  const std::optional<std::string> encoding =
      preset_bpe ? std::optional<std::string>(preset)
                 : (hf_family(preset) != nullptr ? std::nullopt : encoding_for_model(model));
  const HfFamily* family =
      encoding ? nullptr
               : (hf_family(preset) != nullptr ? hf_family(preset) : hf_family_for_model(model));
  if (family != nullptr) {
    try {
      out.counter = std::make_unique<MemoCounter>(load_hf_counter(family->name, data_dir));
      return out;
    } catch (const std::runtime_error& e) {
      out.warning = std::string(e.what()) + "; using the script-aware estimate";
    }
  } else if (!encoding) {
    out.warning =
        "no exact encoding is known for model '" + model + "'; using the script-aware estimate";
  } else {
    try {
      out.counter = bpe_counter(*encoding, data_dir, cache_dir, out);
      return out;
    } catch (const std::runtime_error& e) {
      out.warning = std::string(e.what()) + "; using the script-aware estimate";
    }
  }
  out.counter = std::make_unique<EstimateCounter>();
  return out;
}

}  // namespace autonous::tokens
