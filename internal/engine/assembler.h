#pragma once
// Assembler: orders the final prompt. Pure: no I/O.

#include <vector>

#include "internal/common/message.h"

namespace autonous::engine {

class Assembler {
 public:
  virtual ~Assembler() = default;
  // The messages to send, built from the system prompt, the compressed history and the new user
  // message. An empty system or user content is left out.
  virtual std::vector<common::Message> assemble(const common::Message& system,
                                                const std::vector<common::Message>& history,
                                                const common::Message& user) const = 0;
};

// System first, then history in order, then the user message.
class StandardAssembler final : public Assembler {
 public:
  std::vector<common::Message> assemble(const common::Message& system,
                                        const std::vector<common::Message>& history,
                                        const common::Message& user) const override;
};

}  // namespace autonous::engine
