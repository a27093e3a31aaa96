#include "internal/context/calibration.h"

#include <cmath>
#include <mutex>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/db/write_gate.h"

namespace autonous::context {

double calibration_scale(SQLite::Database& db, const std::string& model) {
  SQLite::Statement q(db, "SELECT scale FROM token_calibration WHERE model = ?");
  q.bind(1, model);
  return q.executeStep() ? std::max(1.0, q.getColumn(0).getDouble()) : 1.0;
}

double raise_calibration(SQLite::Database& db, const std::string& model, double scale_used,
                         int64_t estimated, int64_t actual) {
  if (estimated <= 0 || actual <= estimated) return calibration_scale(db, model);
  const double wanted =
      std::max(1.0, scale_used) * static_cast<double>(actual) / static_cast<double>(estimated);
  const std::lock_guard gate(db::write_gate());
  // max(): another worker may have raised it further meanwhile; it never goes down.
  SQLite::Statement up(db,
                       "INSERT INTO token_calibration(model, scale, raised) VALUES (?, ?, 1) "
                       "ON CONFLICT(model) DO UPDATE SET scale = max(scale, excluded.scale), "
                       "raised = raised + (excluded.scale > scale), "
                       "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')");
  up.bind(1, model);
  up.bind(2, wanted);
  up.exec();
  return calibration_scale(db, model);
}

int64_t ScaledCounter::count_text(std::string_view text) const {
  const int64_t n = inner_.count_text(text);
  if (scale_ == 1.0) return n;
  return static_cast<int64_t>(std::ceil(static_cast<double>(n) * scale_));
}

}  // namespace autonous::context
