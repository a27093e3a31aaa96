// EngineStorage on SQLite (engine_storage.h): the SQLite stores of this folder, together.

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/backend/sqlite/search_index.h"
#include "internal/backend/sqlite/sqlite_provider.h"
#include "internal/backend/sqlite/stores.h"
#include "internal/backend/sqlite/summary_store.h"
#include "internal/engine/calibration_store.h"
#include "internal/engine/engine_storage.h"

namespace autonous::store {
namespace {

class SqliteStorage final : public engine::EngineStorage {
 public:
  explicit SqliteStorage(SQLite::Database& db)
      : db_(db), provider_(db), summaries_(db), search_(db) {}

  engine::Provider& provider() override { return provider_; }
  engine::SummaryStore& summaries() override { return summaries_; }
  recall::Searcher& searcher() override { return search_; }
  int64_t index_backlog(std::chrono::milliseconds budget) override {
    return search_.index_backlog(budget);
  }
  void index_in_transaction(const std::string& chat_id) override {
    search_.index_in_transaction(chat_id);
  }
  void write_context_state(const std::string& chat_id, const engine::ContextState& s) override {
    store::write_context_state(db_, chat_id, s);
  }
  void write_blocks(const std::string& chat_id,
                    const std::vector<engine::BlockRecord>& blocks) override {
    store::write_blocks(db_, chat_id, blocks);
  }
  void write_token_counts(std::string_view counter,
                          const std::vector<engine::TokenCount>& counts) override {
    if (counts.empty() || counter.empty()) return;
    SQLite::Statement q(
        db_, "UPDATE history SET token_count = ?, token_counter = ? WHERE id = ? AND text = ?");
    for (const engine::TokenCount& c : counts) {
      q.bind(1, c.tokens);
      q.bind(2, std::string(counter));
      q.bind(3, c.history_id);
      q.bind(4, c.text);
      q.exec();
      q.reset();
    }
  }
  engine::Calibration calibration(const std::string& endpoint, const std::string& model) override {
    return store::calibration(db_, endpoint, model);
  }
  engine::Calibration calibrate(const std::string& endpoint, const std::string& model,
                                const engine::CalibrationLesson& lesson) override {
    return store::calibrate(db_, endpoint, model, lesson);
  }
  std::optional<engine::LearnedLimit> learned_limit(const std::string& endpoint,
                                                    const std::string& model) override {
    return store::learned_limit(db_, endpoint, model);
  }
  int64_t learn_limit(const std::string& endpoint, const std::string& model,
                      const engine::LearnedLimit& limit) override {
    return store::learn_limit(db_, endpoint, model, limit);
  }

 private:
  SQLite::Database& db_;
  SQLiteProvider provider_;
  SQLiteSummaryStore summaries_;
  SearchIndex search_;
};

}  // namespace

std::unique_ptr<engine::EngineStorage> make_sqlite_storage(SQLite::Database& db) {
  return std::make_unique<SqliteStorage>(db);
}

}  // namespace autonous::store
