// The calibration scale on SQLite (engine/calibration_store.h says the rule).
#include "internal/engine/calibration_store.h"

#include <algorithm>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/backend/sqlite/stores.h"
#include "internal/backend/sqlite/write_transaction.h"

namespace autonous::store {

double calibration_scale(SQLite::Database& db, const std::string& model) {
  SQLite::Statement q(db, "SELECT scale FROM token_calibration WHERE model = ?");
  q.bind(1, model);
  return q.executeStep() ? engine::calibration_applied(q.getColumn(0).getDouble()) : 1.0;
}

double raise_calibration(SQLite::Database& db, const std::string& model, double scale_used,
                         int64_t estimated, int64_t actual) {
  const std::optional<double> want = engine::calibration_wanted(scale_used, estimated, actual);
  if (!want) return calibration_scale(db, model);
  const double wanted = *want;
  db::WriteTransaction tx(db);
  // max(): another worker may have raised it further meanwhile; it never goes down. A stored
  // scale outside [1, 8] (2.9e17 from an older binary's poisoned reply; NULL) is replaced.
  SQLite::Statement up(db,
                       "INSERT INTO token_calibration(model, scale, raised) VALUES (?, ?, 1) "
                       "ON CONFLICT(model) DO UPDATE SET scale = CASE WHEN scale BETWEEN 1 AND 8 "
                       "THEN max(scale, excluded.scale) ELSE excluded.scale END, "
                       "raised = raised + (excluded.scale > scale), "
                       "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')");
  up.bind(1, model);
  up.bind(2, wanted);
  up.exec();
  tx.commit();
  return calibration_scale(db, model);
}

}  // namespace autonous::store
