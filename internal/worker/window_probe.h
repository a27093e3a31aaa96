#pragma once
// WindowProbe: whether a server took a prompt whole, and how far a model of unknown window (no
// preset, no CONTEXT_WINDOW) is trusted with larger prompts once calibration lowers its
// estimate (#28).
//
// A server may cut a prompt silently to a window nobody stated (Ollama's num_ctx, LM Studio's
// overflow policy) and report the cut prompt's count. Calibration alone would take that as a
// lower count and answer by sending more. So:
// - a count lowers the estimate only when the server took the prompt whole: a prompt no larger
//   (in raw estimate tokens, before the scale) than one it took whole, or a larger one whose
//   count grew with it (short by at most kProbeShortfall, at the ratio of the largest whole one);
// - a prompt at least kProbeStrikeGrowth larger whose count did not grow with it is a strike;
//   kPlateauStrikes in a row are a silent cut, and its count is learned as the endpoint's budget;
// - for a model of unknown window, a prompt may be at most kProbeGrowth larger than the largest
//   the server took whole, and never has less room than the raw estimate gave it before
//   calibration.
// Per process, per endpoint and model; thread-safe (a worker's slots share one). A restart
// proves sizes again.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace autonous::worker {

// A prompt may be this much larger (raw) than the largest the server took whole.
inline constexpr double kProbeGrowth = 1.25;
// A prompt at least this much larger (raw) whose count fell short of the growth by more than
// kProbeShortfall is a strike; a count within it proves the new size.
inline constexpr double kProbeStrikeGrowth = 1.1;
inline constexpr double kProbeShortfall = 1.1;
inline constexpr int kPlateauStrikes = 2;
// A count above this many times the raw estimate says nothing about the prompt.
inline constexpr double kProbeMaxCountShare = 2.0;

class WindowProbe {
 public:
  // The cap on a prompt's cost in the engine's tokens (at `scale`) for a budget of `budget`:
  // `scale` × max(budget, kProbeGrowth × the largest raw size taken whole); nullopt when that
  // does not lower the budget.
  std::optional<int64_t> cap(const std::string& key, int64_t budget, double scale) const;

  struct Verdict {
    bool whole = false;  // the server took it whole: its count may lower the estimate
    // Set on the kPlateauStrikes-th strike in a row (the strikes then start over): the count a
    // silent window keeps the server at.
    std::optional<int64_t> window;
  };
  // Records an answered prompt of `raw` raw estimate tokens that the server counted at `count`.
  Verdict observe(const std::string& key, int64_t raw, int64_t count);

  // The largest raw size taken whole for `key`; 0 when none.
  int64_t proven(const std::string& key) const;

 private:
  struct Seen {
    int64_t raw = 0;    // the largest raw size taken whole
    int64_t count = 0;  // the server's count for it
    int strikes = 0;
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, Seen> seen_;
};

}  // namespace autonous::worker
