#pragma once
// WindowProbe: whether a server took a prompt whole, judged turn by turn within each chat, and
// how far a model of unknown window (no preset, no CONTEXT_WINDOW) is trusted with larger
// prompts once calibration lowers its estimate (#28).
//
// A server may cut a prompt silently to a window nobody stated (Ollama's num_ctx, LM Studio's
// overflow policy) and report the cut prompt's count. Calibration alone would take that as a
// lower count and answer by sending more each turn. Between two turns of one chat the prompt
// grows at its end; an honest server's count grows with it at the chat's marginal ratio (what
// the last growth cost: a proxy's hidden prompt does not change it); a cut one stays at its
// window. So, in raw estimate tokens (the estimate before its scale), once the prompt grew by at
// least kMinGrowth since the turn judged last:
// - a count that grew by at least kWholeShare of the prediction was taken whole; so was a prompt
//   no larger than the largest this chat had taken whole. Only such a count may lower the
//   estimate (a chat's first answer in this process only for a model of known window; its first
//   growth sets its marginal ratio, and is judged by the chat's average ratio);
// - a count that grew by under kStrikeShare of it, at the chat's highest count so far (within
//   kCeilingSlack), is a strike at that count. A second strike at about the same count
//   (kSameCeiling), whatever whole turns or compactions came between, is a silent window at it
//   (never under kMinWindow, which no real server has). An honest count rises with the chat:
//   two strikes at one level do not happen to it;
// - for a model of unknown window, a prompt may be at most kProbeGrowth larger (raw) than the
//   largest any chat had taken whole, and never has less room than the raw estimate gave it
//   before calibration (a chat whose text counts more per raw token, CJK say, reaches more
//   server tokens within it).
// A chat's growth judged whole also says what the server adds to every prompt unseen (a proxy's
// hidden prompt: engine/calibration_store.h): from the first prompt of the chat taken whole
// since its last compaction (its anchor) to this one, the count grew at the chat's slope; the
// count minus the slope times the prompt is that part. Judged once the prompt grew since the
// anchor by at least kAddedSpan and 1/kAddedSpanShare of its size (the line is extended to 0
// from there),
// at the chat's highest count since the anchor, the growth before this one taken whole too and
// this growth's ratio within kGrowthAgreement of it, the slope within kSlopeAgreement of it, and
// the part implied not below the part in use less kAddedMinOnLine (a server that cuts, or drops
// whole messages, leaves the line: its count falls below what it reached, or a growth gains
// less than the one before). A line's anchor is a compaction's prompt taken whole, a known
// window's first answer, or else a steady growth; a count that falls while the prompt grew, or
// a change of the tools offered, starts the chat's line again. One chat's line also carries what
// its own prefix costs more (a pinned code paste counts more per raw token than English growth), so
// the part reported is the smallest of what the last kAddedChats chats implied, and only once
// kAddedMinChats did: a part too high would make a longer prompt's estimate too low, one too low is
// safe. Per process, per endpoint and model (a restart, or `worker --drain` runs, judge chats
// again; a chat's state is its last judged turn); the largest prompt taken whole is also kept with
// the calibration (engine::Calibration::proven), and a process starts from it. Thread-safe (a
// worker's slots share one).

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace autonous::worker {

// A prompt may be this much larger (raw) than the largest taken whole.
inline constexpr double kProbeGrowth = 1.25;
// Growth that is judged (smaller growth changes the count by too little to tell).
inline constexpr int64_t kMinGrowth = 32;
// A count that grew by at least this share of the predicted growth was taken whole; by under
// kStrikeShare, at the chat's ceiling, it is a strike.
inline constexpr double kWholeShare = 0.8;
inline constexpr double kStrikeShare = 0.25;
inline constexpr double kCeilingSlack = 0.9;  // at least this share of the chat's highest count
// Two strikes this close (a share of the count, or kStrikeShare of the turn's predicted growth)
// are at one window: Ollama's count moves a little as it drops whole old messages.
inline constexpr double kSameCeiling = 0.02;
// No server has a window this small: a plateau under it is not one (a count of the uncached
// part only, a broken usage).
inline constexpr int64_t kMinWindow = 1024;
// A silent window is learned as this share of the count it keeps the server at: room for an
// answer partly cut and taken whole, which lowered the scale a little.
inline constexpr double kWindowShare = 0.9;
// A count outside [kMinCountShare, kMaxCountShare] of the raw estimate is not this prompt's.
inline constexpr double kMinCountShare = 0.15;
inline constexpr double kMaxCountShare = 2.0;
// The growth since a chat's anchor that implies an added part, and how near the slope over it
// must be to the last growth's.
inline constexpr int64_t kAddedSpan = 160;
inline constexpr int64_t kAddedSpanShare = 8;  // and at least 1/8 of the prompt
inline constexpr double kSlopeAgreement = 0.05;
inline constexpr double kGrowthAgreement = 0.05;
// A line whose implied part is below minus this does not pass through the chat's counts.
inline constexpr int64_t kAddedMinOnLine = 64;
// The chats whose last implied part is kept (per endpoint and model), and how many must have
// implied one before the smallest is reported.
inline constexpr size_t kAddedChats = 8;
inline constexpr size_t kAddedMinChats = 2;
// Chats remembered per process; past it the memory starts over.
inline constexpr size_t kMaxChats = 100'000;

class WindowProbe {
 public:
  // The cap on a prompt's cost in the engine's tokens (at `scale`, with `added` tokens the server
  // adds) for a budget of `budget`: `scale` × max(budget, kProbeGrowth × the largest raw size
  // taken whole) + `added`; nullopt when that does not lower the budget.
  std::optional<int64_t> cap(const std::string& key, int64_t budget, double scale,
                             int64_t added = 0) const;

  struct Verdict {
    bool whole = false;  // the server took it whole: its count may lower the estimate
    // Set on a chat's second strike at one count (the strikes then start over): the count a
    // silent window keeps the server at.
    std::optional<int64_t> window;
    // The prompt was taken whole and the chat's growth since its anchor lies on one line.
    bool on_line = false;
    // Set with on_line once kAddedMinChats chats implied a part: the smallest the last
    // kAddedChats chats implied of the tokens the server adds unseen (the count minus the slope
    // times the prompt; may be negative, which says none).
    std::optional<int64_t> added;
    int64_t proven = 0;  // proven(key) after this answer, read with it
  };
  // Records chat `chat`'s answered prompt of `raw` raw estimate tokens that the server counted at
  // `count`. `believe_first`: a chat's first answer here is taken whole (a model of known window).
  // `teach_added`: whether this prompt's line may tell what the server adds (a request that
  // offered tools may not: its declarations' estimate is not the server's count of them).
  // `added_in_use`: the part the prompt was counted with (a count on a line under it is not on
  // the line).
  Verdict observe(const std::string& key, const std::string& chat, int64_t raw, int64_t count,
                  bool believe_first, bool teach_added = true, int64_t added_in_use = 0);

  // The largest raw size any chat had taken whole for `key`; 0 when none.
  int64_t proven(const std::string& key) const;
  // The largest raw size taken whole for `key` as stored with the calibration
  // (engine::Calibration::proven, written after each answer that raised it): it replaces this
  // process's, so that another process's sizes count here and `context limits --clear` (which
  // sets it to 0) is not undone from memory.
  void set_proven(const std::string& key, int64_t raw);

 private:
  struct Chat {
    int64_t raw = 0;           // the prompt judged last (or a smaller one since: a compaction)
    int64_t count = 0;         // and its count
    int64_t highest = 0;       // the chat's highest count
    int64_t whole = 0;         // the largest prompt of this chat taken whole
    double ratio = 0;          // what the last whole growth cost per raw token; 0: not known yet
    int64_t ceiling = 0;       // the count of the last strike; 0: none
    int64_t anchor_raw = 0;    // the chat's first prompt taken whole since its last compaction
    int64_t anchor_count = 0;  // and its count; 0 (both): none
    int64_t line_highest = 0;  // the highest count since the anchor
    bool last_whole = false;   // the last growth judged was taken whole
    bool last_teach = true;    // the last prompt offered no tools (it may teach a part)
  };
  // What chat `c`'s growth from its anchor to (raw, count), taken whole, implies the server adds;
  // sets the anchor when the chat has none.
  // `steady`: this growth's ratio was within kGrowthAgreement of the one before.
  static std::optional<int64_t> implied_added(Chat& c, int64_t raw, int64_t count, bool steady);

  // Judges chat `c`'s growth to (raw, count) (at least kMinGrowth): whole or a strike (a window
  // on the second, in `v`), its marginal ratio and line state moved on; true when the growth was
  // steady (taken whole at the ratio of the one before, itself taken whole).
  static bool judge_growth(Chat& c, int64_t raw, int64_t count, bool teach_added, Verdict& v);
  // Keeps `own` as chat `chat_key`'s implied part for `key`; the smallest of the last
  // kAddedChats chats' once kAddedMinChats implied one. Under mu_.
  std::optional<int64_t> record_implied(const std::string& key, const std::string& chat_key,
                                        int64_t own);

  mutable std::mutex mu_;
  std::unordered_map<std::string, int64_t> proven_;  // by key
  std::unordered_map<std::string, Chat> chats_;      // by key and chat
  // By key: the last kAddedChats chats' implied parts (chat key, part), oldest first.
  std::unordered_map<std::string, std::deque<std::pair<std::string, int64_t>>> implied_;
};

}  // namespace autonous::worker
