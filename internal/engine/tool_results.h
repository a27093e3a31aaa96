#pragma once
// Old tool results cleared (#29): a result the model read turns ago rarely matters word for
// word, and a long one costs its size on every later turn. A tool message at or below a mark
// (the chat's cut mark: it moves only at a compaction), other than the newest kKeptToolResults
// of those, is carried as a short stub that says how long it was; the call that asked for it
// stays whole, so the unit stays valid on the wire. Results are thus cleared in batches, all that
// a compaction finds, and the prompt's prefix stays between compactions (Anthropic's context
// editing, clear_tool_uses, keeps the newest 3 and clears at least clear_at_least tokens for the
// same reason). Which results are cleared depends on the mark and the stored texts alone (their
// length in bytes, not a token count that calibration moves). Pure.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "internal/common/message.h"

namespace autonous::engine {

// The newest results at or below the mark that stay whole.
inline constexpr int kKeptToolResults = 3;
// A result this long or shorter is never cleared: its stub would save next to nothing.
inline constexpr size_t kClearableBytes = 400;

// Whether `m` is a tool's result: a tool message (paired with its call, tool_units.h), or one sent
// as user text (a request without tools, a broken unit: it keeps its tool_call_id).
bool is_tool_result(const common::Message& m) noexcept;

// 1 for each message the rule clears: a tool result longer than kClearableBytes with a history
// id at or below `through`, other than the newest kKeptToolResults results at or below it.
// `through` 0: none.
std::vector<char> results_to_clear(std::span<const common::Message> messages, int64_t through);

// What a cleared result of `bytes` bytes is carried as.
std::string cleared_result_text(size_t bytes);

// Clears `m` (a tool message): its text becomes the stub.
void clear_result(common::Message& m);

}  // namespace autonous::engine
