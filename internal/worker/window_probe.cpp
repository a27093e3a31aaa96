#include "internal/worker/window_probe.h"

#include <algorithm>
#include <cmath>

namespace autonous::worker {

std::optional<int64_t> WindowProbe::cap(const std::string& key, int64_t budget,
                                        double scale) const {
  if (!(scale > 0.0) || budget <= 0) return std::nullopt;
  const double raw_room =
      std::max(static_cast<double>(budget), kProbeGrowth * static_cast<double>(proven(key)));
  const double room = std::floor(scale * raw_room);
  if (room >= static_cast<double>(budget)) return std::nullopt;
  return std::max<int64_t>(1, static_cast<int64_t>(room));
}

int64_t WindowProbe::proven(const std::string& key) const {
  const std::lock_guard lock(mu_);
  const auto it = proven_.find(key);
  return it == proven_.end() ? 0 : it->second;
}

WindowProbe::Verdict WindowProbe::observe(const std::string& key, const std::string& chat,
                                          int64_t raw, int64_t count, bool believe_first) {
  const auto share = static_cast<double>(count) / static_cast<double>(std::max<int64_t>(raw, 1));
  if (raw <= 0 || count <= 1 || share < kMinCountShare || share > kMaxCountShare)
    return {};  // nothing counted, or a count that cannot be this prompt's
  const std::lock_guard lock(mu_);
  if (chats_.size() >= kMaxChats) chats_.clear();
  const std::string chat_key = key + '\n' + chat;
  const auto found = chats_.find(chat_key);
  Verdict v;
  if (found == chats_.end()) {
    v.whole = believe_first;
    chats_[chat_key] = Chat{raw, count, believe_first ? raw : 0, 0};
  } else {
    Chat& c = found->second;
    const int64_t grew = raw - c.raw;
    if (grew < kMinGrowth) {
      v.whole = raw <= c.whole;  // no larger than a prompt of this chat taken whole
    } else {
      // What the count should have grown by, at the chat's last ratio.
      const double expected =
          static_cast<double>(c.count) * static_cast<double>(grew) / static_cast<double>(c.raw);
      if (static_cast<double>(count - c.count) >= kGrowthShare * expected) {
        v.whole = true;
        c.strikes = 0;
      } else if (++c.strikes >= kPlateauStrikes) {
        c.strikes = 0;
        if (count >= kMinWindow) v.window = count;
      }
    }
    if (v.whole) c.whole = std::max(c.whole, raw);
    c.raw = raw;
    c.count = count;
  }
  if (v.whole) proven_[key] = std::max(proven_[key], raw);
  return v;
}

}  // namespace autonous::worker
