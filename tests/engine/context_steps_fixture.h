#pragma once
// What the step tests share (context_cut_test, context_fit_test, context_fold_test,
// context_evidence_test): a verbatim
// part of `n` alternating messages (ids from 1, user first) of `chars` characters each, one of
// them made `big_chars` long, prepared as a turn prepares it at a 1 000-token budget, and the ends
// of that budget with `fixed` tokens of system, user and framing.

#include <string>
#include <vector>

#include "internal/engine/context_ends.h"
#include "internal/engine/context_settings.h"
#include "internal/engine/context_verbatim.h"
#include "internal/tokens/token_counter.h"

namespace autonous::engine::steps {

inline constexpr int64_t kStepBudget = 1000;

inline Verbatim verbatim_of(int n, size_t chars, int64_t big_id, size_t big_chars,
                            const tokens::TokenCounter& counter) {
  std::vector<common::Message> rows;
  for (int64_t id = 1; id <= n; ++id)
    rows.emplace_back(
        id % 2 == 1 ? common::Role::kUser : common::Role::kAssistant,
        std::string(id == big_id ? big_chars : chars, 'a' + static_cast<char>(id % 26)), id);
  Verbatim v;
  v.rows = prepare(std::move(rows), 0, kStepBudget / kMessageShareDivisor, counter);
  return v;
}

inline Ends ends_of(int64_t fixed) {
  Ends e;
  e.budget_tokens = kStepBudget;
  e.fixed_tokens = fixed;
  e.history_budget_tokens = kStepBudget - fixed;
  return e;
}

}  // namespace autonous::engine::steps
