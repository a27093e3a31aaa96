#pragma once
// WindowProbe: whether a server took a prompt whole, judged turn by turn within each chat, and
// how far a model of unknown window (no preset, no CONTEXT_WINDOW) is trusted with larger
// prompts once calibration lowers its estimate (#28).
//
// A server may cut a prompt silently to a window nobody stated (Ollama's num_ctx, LM Studio's
// overflow policy) and report the cut prompt's count. Calibration alone would take that as a
// lower count and answer by sending more each turn. Between two turns of one chat the prompt
// grows at its end; the server's count grows with it, at about the chat's own ratio, unless the
// server cut it. So, in raw estimate tokens (the estimate before its scale):
// - a prompt that grew by at least kMinGrowth and whose count grew by at least kGrowthShare of
//   what the chat's last ratio predicts was taken whole; so was one no larger than the largest
//   this chat had taken whole; only such a count may lower the estimate (a chat's first answer in
//   this process only for a model of known window);
// - one that grew while its count did not is a strike; kPlateauStrikes in a row in one chat are
//   a silent window at that count (never under kMinWindow, which no real server has);
// - for a model of unknown window, a prompt may be at most kProbeGrowth larger than the largest
//   any chat had taken whole, and never has less room than the raw estimate gave it before
//   calibration.
// Ratios differ by content (code, Chinese, Russian: up to 4× against English), so the judgement
// compares a chat with itself, never chats with each other. Per process, per endpoint and model;
// thread-safe (a worker's slots share one). A restart judges again.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace autonous::worker {

// A prompt may be this much larger (raw) than the largest taken whole.
inline constexpr double kProbeGrowth = 1.25;
// Growth that is judged (smaller growth changes the count by too little to tell).
inline constexpr int64_t kMinGrowth = 32;
// A count that grew by at least this share of the predicted growth grew with the prompt.
inline constexpr double kGrowthShare = 0.25;
inline constexpr int kPlateauStrikes = 2;
// No server has a window this small: a plateau under it is not one (a count of the uncached
// part only, a broken usage).
inline constexpr int64_t kMinWindow = 1024;
// A silent window is learned as this share of the count it keeps the server at: room for an
// answer partly cut and taken whole, which lowered the scale a little.
inline constexpr double kWindowShare = 0.9;
// A count outside [kMinCountShare, kMaxCountShare] of the raw estimate is not this prompt's.
inline constexpr double kMinCountShare = 0.15;
inline constexpr double kMaxCountShare = 2.0;
// Chats remembered per process; past it the memory starts over.
inline constexpr size_t kMaxChats = 100'000;

class WindowProbe {
 public:
  // The cap on a prompt's cost in the engine's tokens (at `scale`) for a budget of `budget`:
  // `scale` × max(budget, kProbeGrowth × the largest raw size taken whole); nullopt when that
  // does not lower the budget.
  std::optional<int64_t> cap(const std::string& key, int64_t budget, double scale) const;

  struct Verdict {
    bool whole = false;  // the server took it whole: its count may lower the estimate
    // Set on the kPlateauStrikes-th strike in a row of one chat (the strikes then start over):
    // the count a silent window keeps the server at.
    std::optional<int64_t> window;
  };
  // Records chat `chat`'s answered prompt of `raw` raw estimate tokens that the server counted at
  // `count`. `believe_first`: a chat's first answer here is taken whole (a model of known window).
  Verdict observe(const std::string& key, const std::string& chat, int64_t raw, int64_t count,
                  bool believe_first);

  // The largest raw size any chat had taken whole for `key`; 0 when none.
  int64_t proven(const std::string& key) const;

 private:
  struct Chat {
    int64_t raw = 0;    // the last answer's prompt
    int64_t count = 0;  // and its count
    int64_t whole = 0;  // the largest prompt of this chat taken whole
    int strikes = 0;
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, int64_t> proven_;  // by key
  std::unordered_map<std::string, Chat> chats_;      // by key and chat
};

}  // namespace autonous::worker
