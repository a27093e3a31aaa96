#pragma once
// Cutting text on code-point boundaries with a visible marker that says how much was cut.
// Pure functions over valid UTF-8.

#include <cstdint>
#include <string>
#include <string_view>

namespace autonous::context {

class TokenCounter;

// The marker appended to cut text: "\n[… N characters cut]".
std::string cut_marker(size_t cut_code_points);

// The first `keep` code points of `text` plus a marker, or `text` itself when it is no longer.
// REQUIRES: `text` is valid UTF-8.
std::string cut_to_chars(std::string_view text, size_t keep);

// The longest head of `text` (with a marker when cut) whose count_text is at most `max_tokens`.
// Returns "" when not even the marker fits. REQUIRES: `text` is valid UTF-8.
std::string cut_to_tokens(std::string_view text, int64_t max_tokens, const TokenCounter& counter);

}  // namespace autonous::context
