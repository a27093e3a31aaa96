#include "internal/engine/context_state_store.h"

namespace autonous::engine {

std::string endpoint_key(std::string base_url) {
  while (!base_url.empty() && base_url.back() == '/') base_url.pop_back();
  return base_url;
}

}  // namespace autonous::engine
