#include "internal/engine/allocator.h"

#include <algorithm>
#include <cmath>

namespace autonous::engine {

int64_t evidence_reserve(const AllocationInput& in) {
  if (!in.recall.enabled || !in.long_term) return 0;
  const int64_t flexible = std::max<int64_t>(in.budget - in.fixed, 0);
  const double share = std::clamp(in.recall.share, 0.0, 0.9);
  const auto reserve =
      static_cast<int64_t>(std::floor(share * static_cast<double>(flexible))) - in.summary;
  return std::clamp<int64_t>(reserve, 0, std::max<int64_t>(in.recall.max_tokens, 0));
}

}  // namespace autonous::engine
