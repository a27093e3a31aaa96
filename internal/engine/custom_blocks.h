#pragma once
// P4 custom blocks: an operator's context for one chat or every chat (table custom_blocks,
// migration 8), sent at the lowest priority: after the evidence, in the last message, in the
// room the rest of the prompt leaves. In the order they were written, each goes whole, else
// halved (its head, with a cut marker), else is left out. Pure.

#include <cstdint>
#include <string>
#include <vector>

namespace autonous::tokens {
class TokenCounter;
}

namespace autonous::engine {

// Custom blocks a prompt considers at most (the oldest first).
inline constexpr size_t kMaxCustomBlocks = 20;

struct CustomBlock {
  int64_t id = 0;
  std::string name;
  std::string text;
};

struct CustomFit {
  std::string text;          // the <custom_context> block; "" when nothing fits
  int64_t tokens = 0;        // its cost at most (the builder counts the joined message exactly)
  std::vector<int64_t> ids;  // the blocks in it
  int64_t halved = 0;        // sent as their first half
  int64_t left_out = 0;      // no room even for half
};

// The blocks that fit `room` tokens.
CustomFit fit_custom(const std::vector<CustomBlock>& blocks, int64_t room,
                     const tokens::TokenCounter& counter);

}  // namespace autonous::engine
