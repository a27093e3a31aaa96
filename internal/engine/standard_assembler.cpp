#include "internal/engine/assembler.h"

namespace autonous::engine {

std::vector<common::Message> StandardAssembler::assemble(
    const common::Message& system, const std::vector<common::Message>& history,
    const common::Message& user) const {
  std::vector<common::Message> out;
  out.reserve(history.size() + 2);
  if (!system.content.empty()) out.push_back(system);
  out.insert(out.end(), history.begin(), history.end());
  if (!user.content.empty()) out.push_back(user);
  return out;
}

}  // namespace autonous::engine
