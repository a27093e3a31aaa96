#include "internal/worker/window_probe.h"

#include <algorithm>
#include <cmath>

#include "internal/common/sha256.h"

namespace autonous::worker {

std::optional<int64_t> WindowProbe::cap(const std::string& key, int64_t budget, double scale,
                                        int64_t added) const {
  if (!(scale > 0.0) || budget <= 0) return std::nullopt;
  const double raw_room =
      std::max(static_cast<double>(budget), kProbeGrowth * static_cast<double>(proven(key)));
  const double room =
      std::floor(scale * raw_room) + static_cast<double>(std::max<int64_t>(added, 0));
  if (room >= static_cast<double>(budget)) return std::nullopt;
  return std::max<int64_t>(1, static_cast<int64_t>(room));
}

int64_t WindowProbe::proven(const std::string& key) const {
  const std::lock_guard lock(mu_);
  const auto it = proven_.find(key);
  return it == proven_.end() ? 0 : it->second;
}

std::optional<int64_t> WindowProbe::implied_added(Chat& c, int64_t raw, int64_t count,
                                                  bool steady) {
  if (c.anchor_raw <= 0) {
    if (!steady) return std::nullopt;  // not right after a growth that was not whole
    c.anchor_raw = raw;
    c.anchor_count = count;
    c.line_highest = count;
    return std::nullopt;
  }
  const int64_t span = raw - c.anchor_raw;
  const bool highest = count >= c.line_highest;
  c.line_highest = std::max(c.line_highest, count);
  if (!highest || !steady) return std::nullopt;  // fell below what the line reached, or bent
  if (span < std::max(kAddedSpan, raw / kAddedSpanShare)) return std::nullopt;  // too short
  const double slope = static_cast<double>(count - c.anchor_count) / static_cast<double>(span);
  if (!(slope >= kMinCountShare && slope <= kMaxCountShare) ||
      std::abs(slope - c.ratio) > kSlopeAgreement * c.ratio)
    return std::nullopt;
  return static_cast<int64_t>(
      std::llround(static_cast<double>(count) - slope * static_cast<double>(raw)));
}

void WindowProbe::set_proven(const std::string& key, int64_t raw) {
  const std::lock_guard lock(mu_);
  proven_[key] = std::max<int64_t>(raw, 0);
}

bool WindowProbe::judge_growth(Chat& c, int64_t raw, int64_t count, bool teach_added, Verdict& v) {
  const int64_t grew = raw - c.raw;
  bool steady = false;  // a growth taken whole at the ratio of the one before
  // What the count should have grown by: at the chat's marginal ratio when known, else at
  // its average (which a hidden prompt inflates: no strike is taken from it alone).
  const double ratio =
      c.ratio > 0 ? c.ratio : static_cast<double>(c.count) / static_cast<double>(c.raw);
  const double expected = ratio * static_cast<double>(grew);
  const auto gained = static_cast<double>(count - c.count);
  if (c.ratio <= 0) {
    // The chat's first growth sets its marginal ratio (the average is inflated by anything
    // the server adds, a hidden prompt say, so no strike is taken from it; a growth that
    // meets even the average's prediction was taken whole).
    c.ratio = std::clamp(gained / static_cast<double>(grew), kMinCountShare, kMaxCountShare);
    v.whole = gained >= kWholeShare * expected;
  } else if (gained < kStrikeShare * expected &&
             static_cast<double>(count) >= kCeilingSlack * static_cast<double>(c.highest)) {
    // At the chat's ceiling and flat: a strike. The second at the same count is a window.
    const double apart = std::abs(static_cast<double>(count - c.ceiling));
    const double same =
        std::max(kSameCeiling * static_cast<double>(c.ceiling), kStrikeShare * expected);
    if (c.ceiling > 0 && apart <= same) {
      const int64_t window = std::min(count, c.ceiling);
      c.ceiling = 0;
      if (window >= kMinWindow) v.window = window;
    } else {
      c.ceiling = count;
    }
  } else if (gained >= kWholeShare * expected) {
    v.whole = true;
    const double ratio_now =
        std::clamp(gained / static_cast<double>(grew), kMinCountShare, kMaxCountShare);
    steady = c.last_whole && std::abs(ratio_now - c.ratio) <= kGrowthAgreement * c.ratio;
    c.ratio = ratio_now;
  }
  // A count that fell while the prompt grew left the chat's line (old messages dropped, a
  // hidden part no longer added), and so does a change of the tools offered: the line starts
  // again.
  if (count < c.count || teach_added != c.last_teach) {
    c.anchor_raw = 0;
    c.anchor_count = 0;
    c.line_highest = 0;
  }
  c.last_whole = v.whole;
  c.last_teach = teach_added;
  c.raw = raw;
  c.count = count;
  return steady;
}

std::optional<int64_t> WindowProbe::record_implied(const std::string& key,
                                                   const std::string& chat_key, int64_t own) {
  auto& last = implied_[key];
  std::erase_if(last, [&chat_key](const auto& e) { return e.first == chat_key; });
  last.emplace_back(chat_key, own);
  if (last.size() > kAddedChats) last.pop_front();
  if (last.size() < kAddedMinChats) return std::nullopt;
  return std::min_element(last.begin(), last.end(),
                          [](const auto& x, const auto& y) { return x.second < y.second; })
      ->second;
}

WindowProbe::Verdict WindowProbe::observe(const std::string& key, const std::string& chat,
                                          int64_t raw, int64_t count, bool believe_first,
                                          bool teach_added, int64_t added_in_use) {
  const auto share = static_cast<double>(count) / static_cast<double>(std::max<int64_t>(raw, 1));
  // (A count above the share may carry a large part the server adds: such a part is not learned
  // until the chat is large enough beside it; a looser bound let counts that mix it with a
  // chat's own content lower the scale below another chat's count.)
  if (raw <= 0 || count <= 1 || share < kMinCountShare || share > kMaxCountShare)
    return {};  // nothing counted, or a count that cannot be this prompt's
  const std::lock_guard lock(mu_);
  if (chats_.size() >= kMaxChats) chats_.clear();
  // The chat by a digest: a front end's chat id may be long.
  const std::string chat_key = key + '\n' + common::sha256_hex(chat).substr(0, 32);
  const auto found = chats_.find(chat_key);
  Verdict v;
  if (found == chats_.end()) {
    v.whole = believe_first;
    chats_[chat_key] = Chat{raw,
                            count,
                            count,
                            believe_first ? raw : 0,
                            0,
                            0,
                            believe_first ? raw : 0,
                            believe_first ? count : 0};
    if (v.whole) proven_[key] = std::max(proven_[key], raw);
    chats_[chat_key].last_teach = teach_added;
    v.proven = proven_[key];
    return v;
  }
  Chat& c = found->second;
  const int64_t grew = raw - c.raw;
  bool steady = false;  // a growth taken whole at the ratio of the one before
  if (grew < kMinGrowth) {
    v.whole = raw <= c.whole;  // no larger than a prompt of this chat taken whole
    if (grew < 0) {            // a compaction: judged from here on
      c.raw = raw;
      c.count = count;
      c.anchor_raw = v.whole ? raw : 0;
      c.anchor_count = v.whole ? count : 0;
      c.line_highest = c.anchor_count;
    }
  } else {
    steady = judge_growth(c, raw, count, teach_added, v);
  }
  c.highest = std::max(c.highest, count);
  if (v.whole && grew >= kMinGrowth) {
    const std::optional<int64_t> own = implied_added(c, raw, count, steady);
    // A count is on the line only when the part it implies is not well under the part in use (a
    // line under it is one a cut made); any part implied counts among the chats' (a low one is
    // the safe side).
    v.on_line = own && *own >= added_in_use - kAddedMinOnLine;
    if (own && teach_added) v.added = record_implied(key, chat_key, *own);
  } else if (!v.whole && c.anchor_raw > 0) {
    c.line_highest = std::max(c.line_highest, count);  // a cut count still raises the bar
  }
  if (v.whole) {
    c.whole = std::max(c.whole, raw);
    proven_[key] = std::max(proven_[key], raw);
  }
  v.proven = proven_[key];
  return v;
}

}  // namespace autonous::worker
