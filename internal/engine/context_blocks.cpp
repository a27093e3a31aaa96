#include "internal/engine/context_blocks.h"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "internal/common/sha256.h"
#include "internal/tokens/token_counter.h"

namespace autonous::engine {

std::vector<Block> describe_blocks(const Ends& ends, const PromptContents& in) {
  std::vector<Block> blocks;
  blocks.push_back({"system", 0, ends.system_tokens - ends.pinned_tokens, 1, true, {}});
  if (ends.pins > 0) blocks.push_back({"pinned", 1, ends.pinned_tokens, ends.pins, true, {}});
  if (in.summary.used)
    blocks.push_back({"summary", 3, in.summary.tokens, 1, true, {in.summary.id}});
  if (!in.history.empty())
    blocks.push_back({"history",
                      3,
                      in.history_tokens,
                      static_cast<int64_t>(in.history.size()),
                      true,
                      {in.history.front().history_id, in.history.back().history_id}});
  blocks.push_back({"user", 1, ends.user_tokens, 1, false, {}});
  // Recalled history ids (documents are listed in the event's recall.items, with their source).
  if (!in.evidence.items.empty()) {
    Block ev{"evidence", 2, in.evidence.tokens, static_cast<int64_t>(in.evidence.items.size()),
             false,      {}};
    for (const recall::RecallItem& item : in.evidence.items)
      if (!item.document) ev.ids.push_back(item.message.history_id);
    blocks.push_back(std::move(ev));
  }
  if (!in.custom.ids.empty())
    blocks.push_back({"custom", 4, in.custom.tokens, static_cast<int64_t>(in.custom.ids.size()),
                      false, in.custom.ids});
  return blocks;
}

Delta compute_delta(const Ends& ends, const PromptContents& in,
                    const std::vector<BlockRecord>& last, const tokens::TokenCounter& counter) {
  Delta d;
  const std::string& system = ends.system.content;
  const size_t prompt_bytes = system.size() - ends.pins_bytes;
  d.records.push_back({"system",
                       common::sha256_hex(std::string_view(system).substr(0, prompt_bytes)),
                       ends.system_tokens - ends.pinned_tokens, 0});
  if (ends.pins > 0)
    d.records.push_back({"pinned",
                         common::sha256_hex(std::string_view(system).substr(prompt_bytes)),
                         ends.pinned_tokens, 0});
  if (in.summary.used)
    d.records.push_back({"summary", common::sha256_hex("summary " + std::to_string(in.summary.id)),
                         in.summary.tokens, 0});
  if (!in.history.empty())
    d.records.push_back(
        {"history",
         common::sha256_hex("history from " + std::to_string(in.history.front().history_id) + "\n" +
                            in.history.front().content),
         in.history_tokens, in.history.back().history_id});
  // A provider caches an exact prefix: the leading run of reused blocks (of the history, the
  // messages the last prompt already had). A block counts as reused only in the same place: a
  // block that appeared or went before it moved it.
  static constexpr std::array<std::string_view, 4> kOrder = {"system", "pinned", "summary",
                                                             "history"};
  std::vector<BlockRecord> stored = last;
  const auto rank = [](const std::string& name) {
    return std::find(kOrder.begin(), kOrder.end(), name) - kOrder.begin();
  };
  std::sort(stored.begin(), stored.end(), [&](const BlockRecord& a, const BlockRecord& b) {
    return rank(a.name) < rank(b.name);
  });
  bool run = true;
  for (size_t i = 0; i < d.records.size(); ++i) {
    const BlockRecord& r = d.records[i];
    const auto before = std::find_if(stored.begin(), stored.end(),
                                     [&](const BlockRecord& b) { return b.name == r.name; });
    const bool reused = before != stored.end() && before->sha256 == r.sha256 &&
                        static_cast<size_t>(before - stored.begin()) == i;
    (reused ? d.reused : d.changed).push_back(r.name);
    if (!reused || !run) {
      run = false;
      continue;
    }
    int64_t cached = r.tokens;
    if (r.name == "history")
      for (const common::Message& m : in.history)
        if (m.history_id > before->through) cached -= counter.count_message(m);
    d.predicted_cached_tokens += std::max<int64_t>(cached, 0);
  }
  return d;
}

}  // namespace autonous::engine
