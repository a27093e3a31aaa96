#pragma once
// Provider: where a chat's history and its stored context state come from. The only context
// interface that does I/O.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "internal/common/message.h"
#include "internal/engine/custom_blocks.h"

namespace autonous::engine {

// Why a compaction moved the start of the verbatim part.
enum class CompactionReason { kNone, kWindow, kThreshold, kOverflow };
std::string_view to_string(CompactionReason reason);

// The engine's memory of a chat between turns (context_state): where the verbatim part of the
// prompt starts and the summarize back-off. Changes only at a compaction.
struct ContextState {
  int64_t chain_start = 0;     // the clear point it belongs to (another clear point: stale)
  int64_t verbatim_after = 0;  // history ids up to this are out of the verbatim part
  int64_t compactions = 0;
  CompactionReason last_reason = CompactionReason::kNone;
  int64_t summary_failures = 0;  // consecutive failed summaries
  int64_t summary_skips = 0;     // compactions left that drop instead of summarizing
  int64_t summary_from = 0;      // summaries with a lower id are set aside (their rows vanished)
  // The newest history id the last compaction kept: an oversized message up to it is carried
  // cut; a newer one too when that compaction was for tokens, whole until the next compaction
  // when it was for the window (context_cut.h, cut_limit).
  int64_t cut_through = 0;
  bool operator==(const ContextState&) const = default;
};

// A stable block of the chat's last answered prompt (context_blocks): what the delta builder
// compares this turn's blocks with. `through`: for the history block, the newest message id in
// that prompt.
struct BlockRecord {
  std::string name;
  std::string sha256;
  int64_t tokens = 0;
  int64_t through = 0;
  bool operator==(const BlockRecord&) const = default;
};

// What the database holds about a chat's context besides its history (chat_settings,
// context_state).
// The newest pinned facts a prompt considers at most.
inline constexpr size_t kMaxPins = 50;

struct ChatState {
  std::string settings_json = "{}";  // the chat's overrides, as stored (validated by the reader)
  int64_t cleared_through = 0;       // history ids up to this are out of the context
  ContextState context;              // defaults when the chat has none
  std::vector<std::string> pins;     // the chat's newest kMaxPins pinned facts, oldest first
  std::vector<BlockRecord> blocks;   // the last answered prompt's stable blocks
  std::vector<CustomBlock> custom;   // the chat's and every chat's custom blocks, oldest first
};

// A history row's token count (history.token_count), by the counter the engine counts with, and
// the text it counted: stored only while the row still holds that text (an edit or a reused id
// between the read and the turn's completion leaves the row without a count).
struct TokenCount {
  int64_t history_id = 0;
  int64_t tokens = 0;
  std::string text;
  bool operator==(const TokenCount&) const = default;
};

class Provider {
 public:
  virtual ~Provider() = default;
  // The newest `limit` messages of `chat_id` with an id above `after_id`, oldest first.
  // Throws on storage errors.
  virtual std::vector<common::Message> get_history(const std::string& chat_id, int limit,
                                                   int64_t after_id) = 0;
  // get_history(), and in `counts` the token count of each message's text stored under
  // `counter` (history.token_count, migration 0018), -1 where none is. The default (a provider
  // that stores no counts) answers -1 for every message.
  virtual std::vector<common::Message> read_history(const std::string& chat_id, int limit,
                                                    int64_t after_id, std::string_view counter,
                                                    std::vector<int64_t>& counts) {
    (void)counter;
    std::vector<common::Message> out = get_history(chat_id, limit, after_id);
    counts.assign(out.size(), -1);
    return out;
  }
  // The chat's stored state; defaults when it has none. Throws on storage errors.
  virtual ChatState chat_state(const std::string& chat_id) = 0;
  // Stores the chat's context state after a compaction. Throws on storage errors.
  virtual void save_context_state(const std::string& chat_id, const ContextState& state) = 0;
};

}  // namespace autonous::engine
