#pragma once
// EngineStorage: everything the context engine reads and writes for one connection, whichever
// backend holds it: the history provider, summaries, the search index, the chat's context state
// and prompt blocks, calibration and learned limits. Each backend implements it
// (make_sqlite_storage, make_pg_storage in backend/<driver>/stores.h); Engine owns one.
// Not thread-safe: one per connection.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "internal/engine/calibration_store.h"
#include "internal/engine/context_state_store.h"
#include "internal/engine/provider.h"
#include "internal/engine/summary.h"
#include "internal/recall/recall.h"

namespace autonous::engine {

class EngineStorage {
 public:
  virtual ~EngineStorage() = default;
  virtual Provider& provider() = 0;
  virtual SummaryStore& summaries() = 0;
  virtual recall::Searcher& searcher() = 0;
  // Indexes queued search rows of any chat for up to `budget`; returns how many.
  virtual int64_t index_backlog(std::chrono::milliseconds budget) = 0;
  // Indexes the chat's queued rows inside the caller's transaction.
  virtual void index_in_transaction(const std::string& chat_id) = 0;
  // Inside the caller's transaction: the chat's context state, its prompt's stable blocks.
  virtual void write_context_state(const std::string& chat_id, const ContextState& s) = 0;
  virtual void write_blocks(const std::string& chat_id, const std::vector<BlockRecord>& blocks) = 0;
  // Inside the caller's transaction: history rows' token counts under `counter` (rows a front end
  // wrote, counted the first time a turn read them), each where the row still holds the text
  // counted.
  virtual void write_token_counts(std::string_view counter,
                                  const std::vector<TokenCount>& counts) = 0;
  // calibration_store.h and context_state_store.h, each in its own transaction.
  // The calibration of (endpoint, model), else of ('', model) (a row from before migration
  // 0012), else none (scale 1, nothing added, nothing proven), as it applies
  // (calibration_applied, added_applied, proven_applied); and storing the parts
  // calibration_after moves (returning its values; the stored row when nothing moved).
  // `endpoint` is endpoint_key()'s.
  virtual Calibration calibration(const std::string& endpoint, const std::string& model) = 0;
  virtual Calibration calibrate(const std::string& endpoint, const std::string& model,
                                const CalibrationLesson& lesson) = 0;
  virtual std::optional<LearnedLimit> learned_limit(const std::string& endpoint,
                                                    const std::string& model) = 0;
  virtual int64_t learn_limit(const std::string& endpoint, const std::string& model,
                              const LearnedLimit& limit) = 0;
};

}  // namespace autonous::engine
