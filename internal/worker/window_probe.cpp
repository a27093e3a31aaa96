#include "internal/worker/window_probe.h"

#include <algorithm>
#include <cmath>

namespace autonous::worker {

std::optional<int64_t> WindowProbe::cap(const std::string& key, int64_t budget,
                                        double scale) const {
  if (!(scale > 0.0) || budget <= 0) return std::nullopt;
  int64_t proven = 0;
  {
    const std::lock_guard lock(mu_);
    if (const auto it = seen_.find(key); it != seen_.end()) proven = it->second.raw;
  }
  const double raw_room =
      std::max(static_cast<double>(budget), kProbeGrowth * static_cast<double>(proven));
  const double room = std::floor(scale * raw_room);
  if (room >= static_cast<double>(budget)) return std::nullopt;
  return std::max<int64_t>(1, static_cast<int64_t>(room));
}

int64_t WindowProbe::proven(const std::string& key) const {
  const std::lock_guard lock(mu_);
  const auto it = seen_.find(key);
  return it == seen_.end() ? 0 : it->second.raw;
}

WindowProbe::Verdict WindowProbe::observe(const std::string& key, int64_t raw, int64_t count) {
  if (raw <= 0 || count <= 1 ||
      static_cast<double>(count) > kProbeMaxCountShare * static_cast<double>(raw))
    return {};  // nothing counted, or a count that cannot be this prompt's
  const std::lock_guard lock(mu_);
  Seen& s = seen_[key];
  if (s.raw == 0) {
    s = Seen{raw, count, 0};
    return {true, std::nullopt};
  }
  if (raw <= s.raw) return {true, std::nullopt};  // no larger than a size taken whole
  // What the server would count for it, at the ratio of the largest prompt it took whole.
  const double expected =
      static_cast<double>(s.count) * static_cast<double>(raw) / static_cast<double>(s.raw);
  if (static_cast<double>(count) * kProbeShortfall >= expected) {
    s = Seen{raw, count, 0};  // the count grew with the prompt: taken whole
    return {true, std::nullopt};
  }
  if (static_cast<double>(raw) < kProbeStrikeGrowth * static_cast<double>(s.raw)) return {};
  if (++s.strikes < kPlateauStrikes) return {};
  s.strikes = 0;
  return {false, count};
}

}  // namespace autonous::worker
