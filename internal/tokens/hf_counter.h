#pragma once
// HfCounter: exact token counts for the open-weight families whose Hugging Face tokenizer.json
// is installed as data (scripts/bootstrap, checked by SHA-256): Llama 3.x, Qwen 2/2.5/3 and
// DeepSeek V3/R1. Counts as the tokenizer encodes a text without special tokens added: the
// family's normalizer (Qwen: NFC), added tokens written in the text as one token each (a
// message that types "<|im_end|>" costs what the server counts), the family's split pattern
// (pretokenizer.h) and byte-level BPE over its merges list (bpe_ranks.h). Framing per message and
// per request from the family's chat template. Immutable; thread-safe.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "internal/tokens/bpe_ranks.h"
#include "internal/tokens/pretokenizer.h"
#include "internal/tokens/token_counter.h"

namespace autonous::tokens {

// A family: its counter's name (TOKEN_COUNTER's value), the data file, and what its chat template
// adds around messages.
struct HfFamily {
  std::string_view name;
  std::string_view file;  // in the tokenizer data directory
  SplitPattern pattern;
  bool nfc;
  int64_t per_message;
  int64_t per_request;
};

// The families: llama3, qwen3, deepseek_v3.
const std::vector<HfFamily>& hf_families();
// The family named `name`, or nullptr.
const HfFamily* hf_family(std::string_view name);
// The family of a model name as providers and local servers spell it (meta-llama/Llama-3.1-8B,
// llama3.2:3b, Qwen/Qwen2.5-7B-Instruct, qwen3-235b-a22b, deepseek-chat, deepseek-reasoner…), or
// nullptr. Llama 4 and 2, Qwen 1 and DeepSeek V2, Coder and LLM have other vocabularies: nullptr.
// Ollama's deepseek-r1 tags under 671b are distills: llama3 (8b, 70b) or qwen3.
const HfFamily* hf_family_for_model(std::string_view model);

class HfCounter final : public TokenCounter {
 public:
  HfCounter(const HfFamily& family, BpeRanks ranks, std::vector<std::string> added)
      : family_(family), ranks_(std::move(ranks)), added_(std::move(added)) {
    index_added();
  }
  // REQUIRES: valid UTF-8.
  int64_t count_text(std::string_view text) const override;
  int64_t per_message() const noexcept override { return family_.per_message; }
  int64_t per_request() const noexcept override { return family_.per_request; }
  std::string_view name() const noexcept override { return family_.name; }

 private:
  void index_added();
  // Tokens of a stretch with no added token in it.
  int64_t count_plain(std::string_view text) const;
  // The length of the longest added token at the start of `text`, or 0.
  size_t added_at(std::string_view text) const;

  const HfFamily& family_;
  BpeRanks ranks_;
  std::vector<std::string> added_;               // longest first
  std::vector<std::vector<uint32_t>> by_first_;  // per first byte: indices into added_
};

// Loads `family`'s tokenizer.json from `data_dir`. Throws std::invalid_argument for an unknown
// family, std::runtime_error when the file is missing, is not a byte-level BPE tokenizer, or its
// pre-tokenizer is not the family's (the message says which file and what).
std::unique_ptr<HfCounter> load_hf_counter(std::string_view family, const std::string& data_dir);

}  // namespace autonous::tokens
