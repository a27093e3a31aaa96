// The engine's stored memory on SQLite (engine/context_state_store.h says what it is).
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/backend/sqlite/statement_cache.h"
#include "internal/backend/sqlite/stores.h"
#include "internal/backend/sqlite/write_transaction.h"

namespace autonous::store {
namespace {

engine::CompactionReason parse_reason(const std::string& s) {
  if (s == "window") return engine::CompactionReason::kWindow;
  if (s == "threshold") return engine::CompactionReason::kThreshold;
  if (s == "overflow") return engine::CompactionReason::kOverflow;
  return engine::CompactionReason::kNone;
}

// A learned limit from `q`'s columns from `first` on: budget_tokens, stated_limit,
// coalesce(message, ''), learned_at.
engine::LearnedLimit read_limit(SQLite::Statement& q, int first) {
  engine::LearnedLimit out;
  out.budget_tokens = q.getColumn(first).getInt64();
  if (!q.getColumn(first + 1).isNull()) out.stated_limit = q.getColumn(first + 1).getInt64();
  out.message = q.getColumn(first + 2).getString();
  out.learned_at = q.getColumn(first + 3).getString();
  return out;
}

}  // namespace

engine::ContextState load_context_state(db::StatementCache& cache, const std::string& chat_id) {
  auto q = cache.get(
      "SELECT chain_start, verbatim_after, compactions, coalesce(last_reason, ''), "
      "summary_failures, summary_skips, summary_from, cut_through FROM context_state "
      "WHERE chat_id = ?");
  q->bind(1, chat_id);
  engine::ContextState s;
  if (q->executeStep()) {
    s.chain_start = q->getColumn(0).getInt64();
    s.verbatim_after = q->getColumn(1).getInt64();
    s.compactions = q->getColumn(2).getInt64();
    s.last_reason = parse_reason(q->getColumn(3).getString());
    s.summary_failures = q->getColumn(4).getInt64();
    s.summary_skips = q->getColumn(5).getInt64();
    s.summary_from = q->getColumn(6).getInt64();
    s.cut_through = q->getColumn(7).getInt64();
  }
  q->reset();
  return s;
}

void save_context_state(SQLite::Database& db, const std::string& chat_id,
                        const engine::ContextState& s) {
  db::WriteTransaction tx(db);
  write_context_state(db, chat_id, s);
  tx.commit();
}

void write_context_state(SQLite::Database& db, const std::string& chat_id,
                         const engine::ContextState& s) {
  SQLite::Statement q(db,
                      "INSERT OR REPLACE INTO context_state(chat_id, chain_start, verbatim_after, "
                      "compactions, last_reason, summary_failures, summary_skips, summary_from, "
                      "cut_through) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  q.bind(1, chat_id);
  q.bind(2, s.chain_start);
  q.bind(3, s.verbatim_after);
  q.bind(4, s.compactions);
  if (s.last_reason == engine::CompactionReason::kNone)
    q.bind(5);
  else
    q.bind(5, std::string(engine::to_string(s.last_reason)));
  q.bind(6, s.summary_failures);
  q.bind(7, s.summary_skips);
  q.bind(8, s.summary_from);
  q.bind(9, s.cut_through);
  q.exec();
}

std::optional<engine::LearnedLimit> learned_limit(SQLite::Database& db, const std::string& endpoint,
                                                  const std::string& model) {
  SQLite::Statement q(db,
                      "SELECT budget_tokens, stated_limit, coalesce(message, ''), learned_at "
                      "FROM learned_limits WHERE endpoint = ? AND model = ?");
  q.bind(1, endpoint);
  q.bind(2, model);
  if (!q.executeStep()) return std::nullopt;
  return read_limit(q, 0);
}

std::vector<engine::LearnedLimitRow> learned_limits(SQLite::Database& db) {
  SQLite::Statement q(db,
                      "SELECT endpoint, model, budget_tokens, stated_limit, coalesce(message, ''), "
                      "learned_at FROM learned_limits ORDER BY endpoint, model");
  std::vector<engine::LearnedLimitRow> out;
  while (q.executeStep()) {
    engine::LearnedLimitRow r;
    r.endpoint = q.getColumn(0).getString();
    r.model = q.getColumn(1).getString();
    r.limit = read_limit(q, 2);
    out.push_back(std::move(r));
  }
  return out;
}

int64_t forget_limits(SQLite::Database& db) {
  // The window's other lesson goes too: the largest prompt taken whole (calibration_store.h).
  db.exec("UPDATE token_calibration SET proven_raw = 0 WHERE proven_raw <> 0");
  return db.exec("DELETE FROM learned_limits");
}

int64_t learn_limit(SQLite::Database& db, const std::string& endpoint, const std::string& model,
                    const engine::LearnedLimit& limit) {
  db::WriteTransaction tx(db);
  SQLite::Statement q(db, std::string("INSERT INTO learned_limits(endpoint, model, budget_tokens, "
                                      "stated_limit, message) VALUES (?1, ?2, ?3, ?4, ?5) "
                                      "ON CONFLICT(endpoint, model) DO UPDATE SET ") +
                              engine::kLearnLimitUpdate +
                              ", learned_at = excluded.learned_at "
                              "RETURNING budget_tokens");
  q.bind(1, endpoint);
  q.bind(2, model);
  q.bind(3, limit.budget_tokens);
  if (limit.stated_limit)
    q.bind(4, *limit.stated_limit);
  else
    q.bind(4);
  q.bind(5, limit.message);
  q.executeStep();
  const int64_t stored = q.getColumn(0).getInt64();
  q.reset();
  tx.commit();
  return stored;
}

std::vector<engine::BlockRecord> load_blocks(db::StatementCache& cache,
                                             const std::string& chat_id) {
  auto q = cache.get(
      "SELECT name, sha256, tokens, through FROM context_blocks WHERE chat_id = ? ORDER BY name");
  q->bind(1, chat_id);
  std::vector<engine::BlockRecord> out;
  while (q->executeStep())
    out.push_back({q->getColumn(0).getString(), q->getColumn(1).getString(),
                   q->getColumn(2).getInt64(), q->getColumn(3).getInt64()});
  return out;
}

void write_blocks(SQLite::Database& db, const std::string& chat_id,
                  const std::vector<engine::BlockRecord>& blocks) {
  SQLite::Statement del(db, "DELETE FROM context_blocks WHERE chat_id = ?");
  del.bind(1, chat_id);
  del.exec();
  SQLite::Statement ins(db,
                        "INSERT INTO context_blocks(chat_id, name, sha256, tokens, through) "
                        "VALUES (?, ?, ?, ?, ?)");
  for (const engine::BlockRecord& b : blocks) {
    ins.bind(1, chat_id);
    ins.bind(2, b.name);
    ins.bind(3, b.sha256);
    ins.bind(4, b.tokens);
    ins.bind(5, b.through);
    ins.exec();
    ins.reset();
  }
}

}  // namespace autonous::store
