#pragma once
// Splits text into the pieces a tokenizer's pre-tokenizer makes: tiktoken's cl100k_base and
// o200k_base, and the Hugging Face `Split` patterns of Llama 3 (cl100k's), Qwen 2/2.5/3 (cl100k's
// with one digit a piece) and DeepSeek V3 (three Isolated splits). Hand-written scanners that
// match the regular expressions alternative by alternative, leftmost-first, with the same
// backtracking outcomes (including the `\s+(?!\S)` rule), over Unicode classes from
// unicode_class.h. Pure and thread-safe.

#include <cstddef>
#include <functional>
#include <string_view>

namespace autonous::tokens {

enum class SplitPattern { kCl100k, kO200k, kQwen2, kDeepSeekV3 };

// Calls `piece` with each piece of `text`, in order; the pieces concatenate to `text`.
// REQUIRES: `text` is valid UTF-8.
void pretokenize(std::string_view text, SplitPattern pattern,
                 const std::function<void(std::string_view)>& piece);

}  // namespace autonous::tokens
