#pragma once
// Small text helpers used across layers: ASCII whitespace trimming, ASCII lower-casing, and
// defusing the tags of the prompt's data blocks.
// Byte-wise, so valid UTF-8 stays valid (no multi-byte sequence holds an ASCII byte).

#include <string>
#include <string_view>

namespace autonous::common {

// `s` without leading and trailing ASCII whitespace (space, \t, \n, \v, \f, \r).
std::string trim(std::string_view s);

// `s` with ASCII letters lower-cased; other bytes unchanged.
std::string to_lower_ascii(std::string s);

// Makes every opening or closing tag of the prompt's data blocks in `text` (any case) inert —
// conversation_summary, recalled_messages, documents, pinned_facts, custom_context — so a message
// cannot open or close a block of its own. Here, below both, because the engine and recall each
// write such blocks.
void defuse_block_tags(std::string& text);

}  // namespace autonous::common
