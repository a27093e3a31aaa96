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
  ChatState chat_state(const std::string& /*chat_id*/) override { return state; }
  void save_context_state(const std::string& /*chat_id*/, const ContextState& saved) override {
    state.context = saved;
    ++saves;
  }

  std::vector<common::Message> history;
  ChatState state;
  std::string last_chat;
  int last_limit = -1;
  int64_t last_after = -1;
  int saves = 0;
};

}  // namespace autonous::engine
