// The calibration on SQLite (engine/calibration_store.h says the rule).
#include "internal/engine/calibration_store.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/backend/sqlite/stores.h"
#include "internal/backend/sqlite/write_transaction.h"

namespace autonous::store {

engine::Calibration calibration(SQLite::Database& db, const std::string& endpoint,
                                const std::string& model) {
  SQLite::Statement q(
      db,
      "SELECT scale, added_tokens, proven_raw FROM token_calibration WHERE model = ? "
      "AND endpoint IN (?, '') ORDER BY endpoint DESC LIMIT 1");
  q.bind(1, model);
  q.bind(2, endpoint);
  if (!q.executeStep()) return {};
  return {engine::calibration_applied(q.getColumn(0).getDouble()),
          engine::added_applied(q.getColumn(1).getInt64()),
          engine::proven_applied(q.getColumn(2).getInt64())};
}

engine::Calibration calibrate(SQLite::Database& db, const std::string& endpoint,
                              const std::string& model, const engine::CalibrationLesson& lesson) {
  const std::optional<engine::Calibration> next = engine::calibration_after(lesson);
  if (!next) return calibration(db, endpoint, model);
  db::WriteTransaction tx(db);
  SQLite::Statement up(
      db,
      "INSERT INTO token_calibration(endpoint, model, scale, added_tokens, proven_raw, raised, "
      "lowered) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(endpoint, model) DO UPDATE SET "
      "scale = excluded.scale, added_tokens = excluded.added_tokens, "
      "proven_raw = max(proven_raw, excluded.proven_raw), "
      "raised = raised + (excluded.scale > scale), lowered = lowered + (excluded.scale < scale), "
      "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')");
  up.bind(1, endpoint);
  up.bind(2, model);
  up.bind(3, next->scale);
  up.bind(4, next->added);
  up.bind(5, next->proven);
  up.bind(6, next->scale > lesson.used.scale ? 1 : 0);
  up.bind(7, next->scale < lesson.used.scale ? 1 : 0);
  up.exec();
  tx.commit();
  return *next;
}

}  // namespace autonous::store
