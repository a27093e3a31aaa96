#include "internal/engine/context_prompt.h"

#include <utility>

#include <fmt/format.h>

#include "internal/engine/assembler.h"
#include "internal/engine/summary_compactor.h"
#include "internal/tokens/token_counter.h"

namespace autonous::engine {

Prompt assemble_prompt(const Assembler& assembler, const Ends& ends,
                       std::vector<common::Message> kept, const std::optional<Summary>& summary,
                       const tokens::TokenCounter& counter) {
  Prompt p;
  if (summary && kept.empty()) {  // the new message leads with it: a copy of that one only
    common::Message user = ends.user;
    user.content.insert(0, summary_block(summary->text));
    p.messages = assembler.assemble(ends.system, kept, user);
  } else {
    if (summary) kept.front().content.insert(0, summary_block(summary->text));
    p.messages = assembler.assemble(ends.system, kept, ends.user);
  }
  p.history = std::move(kept);
  p.tokens = counter.count_prompt(p.messages);
  p.budget = ends.budget_tokens;
  return p;
}

std::optional<int64_t> join_into_user(Prompt& p, const Ends& ends, bool section_head,
                                      const std::string& block,
                                      const tokens::TokenCounter& counter) {
  if (p.messages.empty() || p.messages.back().role != common::Role::kUser) return std::nullopt;
  common::Message& user = p.messages.back();
  common::Message with = user;
  with.content.insert(with.content.size() - ends.suffix,
                      (section_head ? std::string(kEvidenceSection) : std::string("\n\n")) + block);
  const int64_t total = p.tokens - counter.count_message(user) + counter.count_message(with);
  if (total > p.budget) return std::nullopt;
  user = std::move(with);
  const int64_t added = total - p.tokens;
  p.tokens = total;
  return added;
}

CustomStep add_custom(Prompt& p, const Ends& ends, const std::vector<CustomBlock>& blocks,
                      bool user_truncated, bool section_head, const tokens::TokenCounter& counter) {
  CustomStep out;
  if (blocks.empty() || p.messages.empty() || p.messages.back().role != common::Role::kUser ||
      user_truncated)
    return out;
  // Twice at most: the block's cost is an upper bound, but the joined message is recounted.
  for (int attempt = 0; attempt < 2; ++attempt) {
    CustomFit fit = fit_custom(blocks, p.budget - p.tokens - attempt * 16, counter);
    if (fit.text.empty()) {
      fit.left_out = static_cast<int64_t>(blocks.size());
      out.fit = std::move(fit);
      break;
    }
    const std::optional<int64_t> added = join_into_user(p, ends, section_head, fit.text, counter);
    if (!added) {  // over by the recount: try again with less room
      out.fit = CustomFit{};
      out.fit.left_out = static_cast<int64_t>(blocks.size());
      continue;
    }
    fit.tokens = *added;
    out.fit = std::move(fit);
    break;
  }
  out.fit.text.clear();  // the prompt holds it
  if (out.fit.halved > 0 || out.fit.left_out > 0)
    out.warning = ContextWarning{
        "custom_left_out",
        fmt::format("{} custom block(s) halved and {} left out of {}: the prompt left too little "
                    "room",
                    out.fit.halved, out.fit.left_out, blocks.size())};
  return out;
}

}  // namespace autonous::engine
