// chat_settings_store.h's and context_state_store.h's operator functions on PostgreSQL: a chat's
// overrides, clear point and pins (`autonous chat`), the learned limits (`autonous context
// limits`). The same rows and rules as the SQLite versions beside them.

#include "internal/engine/chat_settings_store.h"

#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/stores.h"
#include "internal/engine/context_state_store.h"

namespace autonous::store {

using db::pg::param;

void save_overrides(db::pg::Connection& c, const std::string& chat_id,
                    const std::string& settings_json) {
  c.query(
      "INSERT INTO chat_settings(chat_id, settings) VALUES ($1, $2::jsonb) ON CONFLICT (chat_id) "
      "DO UPDATE SET settings = excluded.settings, updated_at = autonous_now()",
      {param(chat_id), param(settings_json)});
}

bool reset_overrides(db::pg::Connection& c, const std::string& chat_id) {
  return c.query(
              "UPDATE chat_settings SET settings = '{}'::jsonb, updated_at = autonous_now() "
              "WHERE chat_id = $1 AND settings <> '{}'::jsonb",
              {param(chat_id)})
             .affected() > 0;
}

int64_t clear_context(db::pg::Connection& c, const std::string& chat_id) {
  // As on SQLite: the newest id read and stored in one statement, inside the caller's
  // transaction; the engine's state starts over with it.
  const int64_t through =
      c.query(
           "INSERT INTO chat_settings(chat_id, cleared_through, cleared_at) VALUES ($1, "
           "coalesce((SELECT max(id) FROM history WHERE chat_id = $1), 0), autonous_now()) "
           "ON CONFLICT (chat_id) DO UPDATE SET cleared_through = excluded.cleared_through, "
           "cleared_at = excluded.cleared_at, updated_at = excluded.cleared_at "
           "RETURNING cleared_through",
           {param(chat_id)})
          .int64(0, 0);
  c.query("DELETE FROM context_state WHERE chat_id = $1", {param(chat_id)});
  return through;
}

std::vector<engine::Pin> load_pins(db::pg::Connection& c, const std::string& chat_id) {
  const db::pg::Result r =
      c.query("SELECT id, text, created_at FROM chat_pins WHERE chat_id = $1 ORDER BY id",
              {param(chat_id)});
  std::vector<engine::Pin> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back({r.int64(i, 0), r.text(i, 1), r.text(i, 2)});
  return out;
}

int64_t add_pin(db::pg::Connection& c, const std::string& chat_id, const std::string& text) {
  return c
      .query("INSERT INTO chat_pins(chat_id, text) VALUES ($1, $2) RETURNING id",
             {param(chat_id), param(text)})
      .int64(0, 0);
}

bool remove_pin(db::pg::Connection& c, const std::string& chat_id, int64_t pin_id) {
  return c.query("DELETE FROM chat_pins WHERE chat_id = $1 AND id = $2",
                 {param(chat_id), param(pin_id)})
             .affected() > 0;
}

std::vector<engine::LearnedLimitRow> learned_limits(db::pg::Connection& c) {
  const db::pg::Result r = c.query(
      "SELECT endpoint, model, budget_tokens, stated_limit, coalesce(message, ''), learned_at "
      "FROM learned_limits ORDER BY endpoint COLLATE \"C\", model COLLATE \"C\"");
  std::vector<engine::LearnedLimitRow> out;
  for (int i = 0; i < r.rows(); ++i) {
    engine::LearnedLimitRow row;
    row.endpoint = r.text(i, 0);
    row.model = r.text(i, 1);
    row.limit.budget_tokens = r.int64(i, 2);
    if (!r.is_null(i, 3)) row.limit.stated_limit = r.int64(i, 3);
    row.limit.message = r.text(i, 4);
    row.limit.learned_at = r.text(i, 5);
    out.push_back(std::move(row));
  }
  return out;
}

int64_t forget_limits(db::pg::Connection& c) {
  // The window's other lesson goes too: the largest prompt taken whole (calibration_store.h).
  c.query("UPDATE token_calibration SET proven_raw = 0 WHERE proven_raw <> 0");
  return c.query("DELETE FROM learned_limits").affected();
}

}  // namespace autonous::store
