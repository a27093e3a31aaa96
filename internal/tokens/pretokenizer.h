#pragma once
// Splits text into the pieces tiktoken's pre-tokenizer makes for cl100k_base and o200k_base:
// a hand-written scanner that matches the encodings' regular expressions alternative by
// alternative, leftmost-first, with the same backtracking outcomes (including the `\s+(?!\S)`
// rule), over Unicode classes from unicode_class.h. Pure and thread-safe.

#include <cstddef>
#include <functional>
#include <string_view>

namespace autonous::tokens {

enum class SplitPattern { kCl100k, kO200k };

// Calls `piece` with each piece of `text`, in order; the pieces concatenate to `text`.
// REQUIRES: `text` is valid UTF-8.
void pretokenize(std::string_view text, SplitPattern pattern,
                 const std::function<void(std::string_view)>& piece);

}  // namespace autonous::tokens
