#include "internal/store/context_state_store.h"

namespace autonous::store {

std::string endpoint_key(std::string base_url) {
  while (!base_url.empty() && base_url.back() == '/') base_url.pop_back();
  return base_url;
}

}  // namespace autonous::store
