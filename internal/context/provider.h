#pragma once
// Provider: where a chat's history and its stored context state come from. The only context
// interface that does I/O.

#include <cstdint>
#include <string>
#include <vector>

#include "internal/common/message.h"

namespace autonous::context {

// What the database holds about a chat's context besides its history (chat_settings).
struct ChatState {
  std::string settings_json = "{}";  // the chat's overrides, as stored (validated by the reader)
  int64_t cleared_through = 0;       // history ids up to this are out of the context
};

class Provider {
 public:
  virtual ~Provider() = default;
  // The newest `limit` messages of `chat_id` with an id above `after_id`, oldest first.
  // Throws on storage errors.
  virtual std::vector<common::Message> get_history(const std::string& chat_id, int limit,
                                                   int64_t after_id) = 0;
  // The chat's stored state; defaults when it has none. Throws on storage errors.
  virtual ChatState chat_state(const std::string& chat_id) = 0;
};

}  // namespace autonous::context
