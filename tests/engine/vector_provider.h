#pragma once
// An in-memory Provider: the engine's logic is pure, so it is tested without storage (the
// SQLite provider has its own tests against a real file).

#include <string>
#include <vector>

#include "internal/engine/provider.h"

namespace autonous::engine {

class VectorProvider final : public Provider {
 public:
  std::vector<common::Message> get_history(const std::string& chat_id, int limit,
                                           int64_t after_id) override {
    last_chat = chat_id;
    last_limit = limit;
    last_after = after_id;
    std::vector<common::Message> out;
    for (const auto& m : history)
      if (m.history_id > after_id) out.push_back(m);
    if (static_cast<int>(out.size()) > limit) out.erase(out.begin(), out.end() - limit);
    return out;
  }
  // Stored token counts (migration 0018): stored[i] is history[i]'s under `stored_by`, -1 none.
  std::vector<common::Message> read_history(const std::string& chat_id, int limit, int64_t after_id,
                                            std::string_view counter,
                                            std::vector<int64_t>& counts) override {
    std::vector<common::Message> out = get_history(chat_id, limit, after_id);
    counts.clear();
    for (const common::Message& m : out) {
      int64_t n = -1;
      for (size_t i = 0; i < history.size() && i < stored.size(); ++i)
        if (history[i].history_id == m.history_id && counter == stored_by) n = stored[i];
      counts.push_back(n);
    }
    return out;
  }
  ChatState chat_state(const std::string& /*chat_id*/) override { return state; }
  void save_context_state(const std::string& /*chat_id*/, const ContextState& saved) override {
    state.context = saved;
    ++saves;
  }

  std::vector<common::Message> history;
  std::vector<int64_t> stored;
  std::string stored_by;
  ChatState state;
  std::string last_chat;
  int last_limit = -1;
  int64_t last_after = -1;
  int saves = 0;
};

}  // namespace autonous::engine
