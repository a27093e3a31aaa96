#include "internal/engine/context_state_store.h"

#include <algorithm>

namespace autonous::engine {

std::string endpoint_key(std::string base_url) {
  // The query goes (#31): Azure's api-version names no other endpoint, and a gateway's query may
  // hold a subscription key, which must not reach a table or an event.
  base_url.resize(std::min(base_url.find('?'), base_url.size()));
  while (!base_url.empty() && base_url.back() == '/') base_url.pop_back();
  return base_url;
}

}  // namespace autonous::engine
