// The calibration scale on SQLite (engine/calibration_store.h says the rule).
#include "internal/engine/calibration_store.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/backend/sqlite/stores.h"
#include "internal/backend/sqlite/write_transaction.h"

namespace autonous::store {

double calibration_scale(SQLite::Database& db, const std::string& endpoint,
                         const std::string& model) {
  SQLite::Statement q(db,
                      "SELECT scale FROM token_calibration WHERE model = ? AND endpoint IN (?, '') "
                      "ORDER BY endpoint DESC LIMIT 1");
  q.bind(1, model);
  q.bind(2, endpoint);
  return q.executeStep() ? engine::calibration_applied(q.getColumn(0).getDouble()) : 1.0;
}

double calibrate(SQLite::Database& db, const std::string& endpoint, const std::string& model,
                 double scale_used, int64_t estimated, int64_t actual) {
  const std::optional<double> next = engine::calibration_next(scale_used, estimated, actual);
  if (!next) return calibration_scale(db, endpoint, model);
  db::WriteTransaction tx(db);
  // The last answer's move wins: a scale another slot moved meanwhile was computed from an
  // older prompt.
  SQLite::Statement up(db,
                       "INSERT INTO token_calibration(endpoint, model, scale, raised, lowered) "
                       "VALUES (?, ?, ?, ?, ?) ON CONFLICT(endpoint, model) DO UPDATE SET "
                       "scale = excluded.scale, raised = raised + (excluded.scale > scale), "
                       "lowered = lowered + (excluded.scale < scale), "
                       "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')");
  up.bind(1, endpoint);
  up.bind(2, model);
  up.bind(3, *next);
  up.bind(4, *next > scale_used ? 1 : 0);
  up.bind(5, *next < scale_used ? 1 : 0);
  up.exec();
  tx.commit();
  return *next;
}

}  // namespace autonous::store
