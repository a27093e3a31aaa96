#pragma once
// Provider: where a chat's history comes from. The only context interface that does I/O.

#include <string>
#include <vector>

#include "internal/common/message.h"

namespace autonous::context {

class Provider {
 public:
  virtual ~Provider() = default;
  // The newest `limit` messages of `chat_id`, oldest first. Throws on storage errors.
  virtual std::vector<common::Message> get_history(const std::string& chat_id, int limit) = 0;
};

}  // namespace autonous::context
