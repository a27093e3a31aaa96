#pragma once
// An in-memory SummaryStore over a VectorProvider's history, for the engine's tests: summaries
// kept in order with ids from 1, chains by their clear point.

#include <optional>
#include <string>
#include <vector>

#include "internal/engine/summary.h"
#include "tests/engine/vector_provider.h"

namespace autonous::engine {

class MemorySummaryStore final : public SummaryStore {
 public:
  explicit MemorySummaryStore(VectorProvider& provider) : provider_(provider) {}
  std::optional<Summary> latest(const std::string& /*chat*/, int64_t chain_start) override {
    ++latest_calls;
    for (auto it = rows.rbegin(); it != rows.rend(); ++it)
      if (it->chain_start == chain_start) return *it;
    return std::nullopt;
  }
  int64_t count_between(const std::string& /*chat*/, int64_t after, int64_t before) override {
    int64_t n = 0;
    for (const auto& m : provider_.history) n += m.history_id > after && m.history_id < before;
    return n;
  }
  int64_t save(const std::string& /*chat*/, const Summary& s,
               const std::vector<std::optional<common::Usage>>& /*usage*/,
               int64_t /*covered*/) override {
    rows.push_back(s);
    rows.back().id = static_cast<int64_t>(rows.size());
    return rows.back().id;
  }
  std::vector<Summary> rows;
  int latest_calls = 0;

 private:
  VectorProvider& provider_;
};

}  // namespace autonous::engine
