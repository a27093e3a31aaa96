// The calibration on SQLite (engine/calibration_store.h says the rule).
#include "internal/engine/calibration_store.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/backend/sqlite/stores.h"
#include "internal/backend/sqlite/write_transaction.h"

namespace autonous::store {

engine::Calibration calibration(SQLite::Database& db, const std::string& endpoint,
                                const std::string& model) {
  SQLite::Statement q(db,
                      "SELECT scale, added_tokens FROM token_calibration WHERE model = ? AND "
                      "endpoint IN (?, '') ORDER BY endpoint DESC LIMIT 1");
  q.bind(1, model);
  q.bind(2, endpoint);
  if (!q.executeStep()) return {};
  return {engine::calibration_applied(q.getColumn(0).getDouble()),
          engine::added_applied(q.getColumn(1).getInt64())};
}

engine::Calibration calibrate(SQLite::Database& db, const std::string& endpoint,
                              const std::string& model, const engine::Calibration& used,
                              int64_t estimated, int64_t actual, int64_t added) {
  const std::optional<double> next = engine::calibration_next(used.scale, estimated, actual);
  added = engine::added_applied(added);
  if (!next && added == engine::added_applied(used.added)) return calibration(db, endpoint, model);
  const engine::Calibration stored{next.value_or(engine::calibration_applied(used.scale)), added};
  db::WriteTransaction tx(db);
  // The last answer's move wins: a calibration another slot moved meanwhile was computed from an
  // older prompt.
  SQLite::Statement up(
      db,
      "INSERT INTO token_calibration(endpoint, model, scale, added_tokens, raised, lowered) "
      "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(endpoint, model) DO UPDATE SET "
      "scale = excluded.scale, added_tokens = excluded.added_tokens, "
      "raised = raised + (excluded.scale > scale), lowered = lowered + (excluded.scale < scale), "
      "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')");
  up.bind(1, endpoint);
  up.bind(2, model);
  up.bind(3, stored.scale);
  up.bind(4, stored.added);
  up.bind(5, stored.scale > used.scale ? 1 : 0);
  up.bind(6, stored.scale < used.scale ? 1 : 0);
  up.exec();
  tx.commit();
  return stored;
}

}  // namespace autonous::store
