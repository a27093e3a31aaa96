// The calibration on SQLite (engine/calibration_store.h says the rule).
#include "internal/engine/calibration_store.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/backend/sqlite/stores.h"
#include "internal/backend/sqlite/write_transaction.h"
#include "internal/tokens/scaled_counter.h"

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
  const std::optional<engine::CalibrationMove> m = engine::calibration_after(lesson);
  if (!m) return calibration(db, endpoint, model);
  db::WriteTransaction tx(db);
  // Only the parts this answer moved (engine::CalibrationMove); a raise applies when it is above
  // what another slot stored meanwhile, any other move only from the scale this answer used (or
  // from one out of range); a proven size out of range (a hand-edited row) is replaced.
  static constexpr const char* kScaleMoves =
      "?6 AND ((?9 AND excluded.scale > scale) OR abs(scale - ?11) <= 1e-9 * ?11 OR NOT (scale "
      "BETWEEN ?12 AND ?13))";
  SQLite::Statement up(
      db,
      std::string("INSERT INTO token_calibration(endpoint, model, scale, added_tokens, proven_raw, "
                  "raised, lowered) VALUES (?1, ?2, ?3, ?4, ?5, ?9, ?10) "
                  "ON CONFLICT(endpoint, model) DO UPDATE SET scale = CASE WHEN ") +
          kScaleMoves +
          " THEN excluded.scale ELSE scale END, "
          "added_tokens = CASE WHEN ?7 THEN excluded.added_tokens ELSE added_tokens END, "
          "proven_raw = CASE WHEN NOT ?14 THEN proven_raw WHEN typeof(proven_raw) = 'integer' AND "
          "proven_raw BETWEEN 0 AND ?8 THEN max(proven_raw, excluded.proven_raw) ELSE "
          "excluded.proven_raw END, "
          "raised = raised + (" +
          kScaleMoves + " AND excluded.scale > scale), lowered = lowered + (" + kScaleMoves +
          " AND excluded.scale < scale), updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
          "RETURNING scale, added_tokens, proven_raw");
  up.bind(1, endpoint);
  up.bind(2, model);
  up.bind(3, m->to.scale);
  up.bind(4, m->to.added);
  up.bind(5, m->to.proven);
  up.bind(6, m->scale ? 1 : 0);
  up.bind(7, m->added ? 1 : 0);
  up.bind(8, engine::kProvenMax);
  up.bind(9, m->scale && m->to.scale > lesson.used.scale ? 1 : 0);
  up.bind(10, m->scale && m->to.scale < lesson.used.scale ? 1 : 0);
  up.bind(11, engine::calibration_applied(lesson.used.scale));
  up.bind(12, tokens::ScaledCounter::kMinScale);
  up.bind(13, tokens::ScaledCounter::kMaxScale);
  up.bind(14, m->proven ? 1 : 0);
  engine::Calibration stored = m->to;
  if (up.executeStep())
    stored = {engine::calibration_applied(up.getColumn(0).getDouble()),
              engine::added_applied(up.getColumn(1).getInt64()),
              engine::proven_applied(up.getColumn(2).getInt64())};
  while (up.executeStep()) {
  }
  tx.commit();
  return stored;
}

}  // namespace autonous::store
