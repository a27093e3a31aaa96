// EngineStorage on PostgreSQL (engine_storage.h): the same tables and queries as the SQLite
// stores of this folder (sqlite_provider, sqlite_summary_store, chat_settings_store,
// context_state_store, calibration_store), and the search index of search.h.

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/search.h"
#include "internal/backend/postgres/stores.h"
#include "internal/engine/calibration_store.h"
#include "internal/engine/engine_storage.h"
#include "internal/tokens/scaled_counter.h"

namespace autonous::store {
namespace {

using db::pg::param;

engine::CompactionReason parse_reason(const std::string& s) {
  if (s == "window") return engine::CompactionReason::kWindow;
  if (s == "threshold") return engine::CompactionReason::kThreshold;
  if (s == "overflow") return engine::CompactionReason::kOverflow;
  return engine::CompactionReason::kNone;
}

class PgProvider final : public engine::Provider {
 public:
  explicit PgProvider(db::pg::Connection& c) : c_(c) {}

  std::vector<common::Message> get_history(const std::string& chat_id, int limit,
                                           int64_t after_id) override {
    std::vector<int64_t> counts;
    return read_history(chat_id, limit, after_id, {}, counts);
  }

  std::vector<common::Message> read_history(const std::string& chat_id, int limit, int64_t after_id,
                                            std::string_view counter,
                                            std::vector<int64_t>& counts) override {
    counts.clear();
    if (limit <= 0) return {};
    const db::pg::Result r = c_.query(
        "SELECT id, role, text, created_at, tool_calls, tool_call_id, CASE WHEN token_counter = "
        "$4 THEN token_count END FROM history WHERE chat_id = $1 AND id > $2 ORDER BY id DESC "
        "LIMIT $3",
        {param(chat_id), param(after_id), param(int64_t{limit}), param(std::string(counter))});
    std::vector<common::Message> out = pg_messages(r);
    for (int i = 0; i < r.rows(); ++i) counts.push_back(r.is_null(i, 6) ? -1 : r.int64(i, 6));
    std::reverse(out.begin(), out.end());
    std::reverse(counts.begin(), counts.end());
    return out;
  }

  // The chat's settings, context state, pins, prompt blocks and custom blocks in one round trip
  // (five reads a turn were five round trips): one row per item, tagged by kind (k) and ordered
  // within it (n); columns a to h are text.
  engine::ChatState chat_state(const std::string& chat_id) override {
    static const std::string kRead =
        "SELECT k, a, b, c, d, e, f, g, h FROM ("
        " SELECT 0 AS k, 0::bigint AS n, settings::text AS a, cleared_through::text AS b,"
        " NULL::text AS c, NULL::text AS d, NULL::text AS e, NULL::text AS f, NULL::text AS g,"
        " NULL::text AS h FROM chat_settings WHERE chat_id = $1"
        " UNION ALL SELECT 1, 0, chain_start::text, verbatim_after::text, compactions::text,"
        " coalesce(last_reason, ''), summary_failures::text, summary_skips::text,"
        " summary_from::text, cut_through::text FROM context_state WHERE chat_id = $1"
        " UNION ALL SELECT 2, id, text, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM"
        " (SELECT id, text FROM chat_pins WHERE chat_id = $1 ORDER BY id DESC LIMIT $2) p"
        " UNION ALL SELECT 3, row_number() OVER (ORDER BY name COLLATE \"C\"), name, sha256,"
        " tokens::text, through::text, NULL, NULL, NULL, NULL FROM context_blocks"
        " WHERE chat_id = $1"
        " UNION ALL SELECT 4, row_number() OVER (ORDER BY chat_id IS NULL, id), id::text, name,"
        " text, NULL, NULL, NULL, NULL, NULL FROM (SELECT id, name, text, chat_id FROM"
        " custom_blocks WHERE chat_id = $1 OR chat_id IS NULL ORDER BY chat_id IS NULL, id"
        " LIMIT $3) u"
        ") x ORDER BY k, n";
    const db::pg::Result r =
        c_.query(kRead, {param(chat_id), param(static_cast<int64_t>(engine::kMaxPins)),
                         param(static_cast<int64_t>(engine::kMaxCustomBlocks))});
    engine::ChatState out;
    const auto num = [&r](int row, int col) { return std::stoll(r.text(row, col)); };
    for (int i = 0; i < r.rows(); ++i) {
      switch (num(i, 0)) {
        case 0:
          out.settings_json = r.text(i, 1);
          out.cleared_through = num(i, 2);
          break;
        case 1: {
          engine::ContextState& s = out.context;
          s.chain_start = num(i, 1);
          s.verbatim_after = num(i, 2);
          s.compactions = num(i, 3);
          s.last_reason = parse_reason(r.text(i, 4));
          s.summary_failures = num(i, 5);
          s.summary_skips = num(i, 6);
          s.summary_from = num(i, 7);
          s.cut_through = num(i, 8);
          break;
        }
        case 2:
          out.pins.push_back(r.text(i, 1));
          break;
        case 3:
          out.blocks.push_back({r.text(i, 1), r.text(i, 2), num(i, 3), num(i, 4)});
          break;
        default:
          out.custom.push_back({num(i, 1), r.text(i, 2), r.text(i, 3)});
      }
    }
    return out;
  }

  void save_context_state(const std::string& chat_id, const engine::ContextState& s) override {
    db::pg::Transaction tx(c_);
    write_state(chat_id, s);
    tx.commit();
  }

  void write_state(const std::string& chat_id, const engine::ContextState& s) {
    c_.query(
        "INSERT INTO context_state(chat_id, chain_start, verbatim_after, compactions, "
        "last_reason, summary_failures, summary_skips, summary_from, cut_through) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (chat_id) DO UPDATE SET "
        "chain_start = excluded.chain_start, verbatim_after = excluded.verbatim_after, "
        "compactions = excluded.compactions, last_reason = excluded.last_reason, "
        "summary_failures = excluded.summary_failures, summary_skips = excluded.summary_skips, "
        "summary_from = excluded.summary_from, cut_through = excluded.cut_through, "
        "updated_at = autonous_now()",
        {param(chat_id), param(s.chain_start), param(s.verbatim_after), param(s.compactions),
         s.last_reason == engine::CompactionReason::kNone
             ? db::pg::Param{}
             : param(std::string(engine::to_string(s.last_reason))),
         param(s.summary_failures), param(s.summary_skips), param(s.summary_from),
         param(s.cut_through)});
  }

 private:
  db::pg::Connection& c_;
};

class PgSummaryStore final : public engine::SummaryStore {
 public:
  explicit PgSummaryStore(db::pg::Connection& c) : c_(c) {}

  std::optional<engine::Summary> latest(const std::string& chat_id, int64_t chain_start) override {
    const db::pg::Result r = c_.query(
        "SELECT id, covers_through, text, tokens, model FROM context_summaries "
        "WHERE chat_id = $1 AND chain_start = $2 ORDER BY id DESC LIMIT 1",
        {param(chat_id), param(chain_start)});
    if (r.rows() == 0) return std::nullopt;
    engine::Summary s;
    s.id = r.int64(0, 0);
    s.covers_through = r.int64(0, 1);
    s.chain_start = chain_start;
    s.text = r.text(0, 2);
    s.tokens = r.int64(0, 3);
    s.model = r.text(0, 4);
    return s;
  }

  int64_t count_between(const std::string& chat_id, int64_t after_id, int64_t before_id) override {
    return c_
        .query("SELECT count(*) FROM history WHERE chat_id = $1 AND id > $2 AND id < $3",
               {param(chat_id), param(after_id), param(before_id)})
        .int64(0, 0);
  }

  int64_t save(const std::string& chat_id, const engine::Summary& summary,
               const std::vector<std::optional<common::Usage>>& usage,
               int64_t messages_covered) override {
    nlohmann::json calls = nlohmann::json::array();
    for (const auto& u : usage) calls.push_back(u ? nlohmann::json(*u) : nlohmann::json(nullptr));
    db::pg::Transaction tx(c_);
    const int64_t id =
        c_.query(
              "INSERT INTO context_summaries(chat_id, chain_start, covers_through, previous_id, "
              "messages_covered, text, tokens, model, usage) VALUES ($1, $2, $3, (SELECT max(id) "
              "FROM context_summaries WHERE chat_id = $1 AND chain_start = $2), $4, $5, $6, $7, "
              "$8::jsonb) RETURNING id",
              {param(chat_id), param(summary.chain_start), param(summary.covers_through),
               param(messages_covered), param(summary.text), param(summary.tokens),
               param(summary.model), calls.dump()})
            .int64(0, 0);
    tx.commit();
    return id;
  }

 private:
  db::pg::Connection& c_;
};

class PgStorage final : public engine::EngineStorage {
 public:
  PgStorage(db::pg::Connection& c, bool* pair_indexed)
      : c_(c), provider_(c), summaries_(c), search_(c, pair_indexed) {}

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
    provider_.write_state(chat_id, s);
  }
  void write_blocks(const std::string& chat_id,
                    const std::vector<engine::BlockRecord>& blocks) override {
    // One statement: the blocks not written this time go, the others are written over.
    std::vector<db::pg::Param> names, shas, tokens, through;
    for (const engine::BlockRecord& b : blocks) {
      names.push_back(b.name);
      shas.push_back(b.sha256);
      tokens.push_back(param(b.tokens));
      through.push_back(param(b.through));
    }
    const std::string names_array = db::pg::array_literal(names);
    c_.query(
        "WITH gone AS (DELETE FROM context_blocks WHERE chat_id = $1 AND name <> ALL($2::text[])) "
        "INSERT INTO context_blocks(chat_id, name, sha256, tokens, through) SELECT $1, n, s, t, h "
        "FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS b(n, s, t, h) "
        "ON CONFLICT (chat_id, name) DO UPDATE SET sha256 = excluded.sha256, tokens = "
        "excluded.tokens, through = excluded.through, updated_at = autonous_now()",
        {param(chat_id), names_array, db::pg::array_literal(shas), db::pg::array_literal(tokens),
         db::pg::array_literal(through)});
  }
  void write_token_counts(std::string_view counter,
                          const std::vector<engine::TokenCount>& counts) override {
    if (counts.empty() || counter.empty()) return;
    std::vector<db::pg::Param> ids, tokens, texts;
    for (const engine::TokenCount& c : counts) {
      ids.push_back(param(c.history_id));
      tokens.push_back(param(c.tokens));
      texts.push_back(c.text);
    }
    c_.query(
        "UPDATE history h SET token_count = v.n, token_counter = $1 FROM unnest($2::bigint[], "
        "$3::integer[], $4::text[]) AS v(id, n, t) WHERE h.id = v.id AND h.text = v.t",
        {param(std::string(counter)), db::pg::array_literal(ids), db::pg::array_literal(tokens),
         db::pg::array_literal(texts)});
  }
  engine::Calibration calibration(const std::string& endpoint, const std::string& model) override {
    const db::pg::Result r = c_.query(
        "SELECT scale, added_tokens, proven_raw FROM token_calibration WHERE model = $1 AND "
        "endpoint IN ($2, '') ORDER BY endpoint DESC LIMIT 1",
        {param(model), param(endpoint)});
    if (r.rows() == 0) return {};
    return {engine::calibration_applied(r.real(0, 0)), engine::added_applied(r.int64(0, 1)),
            engine::proven_applied(r.int64(0, 2))};
  }
  engine::Calibration calibrate(const std::string& endpoint, const std::string& model,
                                const engine::CalibrationLesson& lesson) override {
    const std::optional<engine::CalibrationMove> m = engine::calibration_after(lesson);
    if (!m) return calibration(endpoint, model);
    // Only the parts this answer moved (engine::CalibrationMove, calibration_store.cpp): a raise
    // applies when above what another slot stored, any other move only from the scale used.
    const std::string moves =
        "$6::boolean AND (($9::bigint = 1 AND excluded.scale > token_calibration.scale) OR "
        "abs(token_calibration.scale - $11::double precision) <= 1e-9 * $11::double precision "
        "OR NOT (token_calibration.scale BETWEEN $12::double precision AND $13::double "
        "precision))";
    const db::pg::Result r = c_.query(
        "INSERT INTO token_calibration(endpoint, model, scale, added_tokens, proven_raw, raised, "
        "lowered) VALUES ($1, $2, $3::double precision, $4::bigint, $5::bigint, $9::bigint, "
        "$10::bigint) ON CONFLICT (endpoint, model) DO UPDATE SET scale = CASE WHEN " +
            moves +
            " THEN excluded.scale ELSE token_calibration.scale END, added_tokens = CASE WHEN "
            "$7::boolean THEN excluded.added_tokens ELSE token_calibration.added_tokens END, "
            "proven_raw = CASE WHEN NOT $14::boolean THEN token_calibration.proven_raw WHEN "
            "token_calibration.proven_raw <= $8::bigint THEN "
            "greatest(token_calibration.proven_raw, "
            "excluded.proven_raw) ELSE excluded.proven_raw END, raised = token_calibration.raised "
            "+ CASE WHEN " +
            moves + " AND excluded.scale > token_calibration.scale THEN 1 ELSE 0 END, lowered = " +
            "token_calibration.lowered + CASE WHEN " + moves +
            " AND excluded.scale < token_calibration.scale THEN 1 ELSE 0 END, updated_at = "
            "autonous_now() RETURNING scale, added_tokens, proven_raw",
        {param(endpoint), param(model), fmt::format("{}", m->to.scale), param(m->to.added),
         param(m->to.proven), std::string(m->scale ? "true" : "false"),
         std::string(m->added ? "true" : "false"), param(engine::kProvenMax),
         param(int64_t{m->scale && m->to.scale > lesson.used.scale ? 1 : 0}),
         param(int64_t{m->scale && m->to.scale < lesson.used.scale ? 1 : 0}),
         fmt::format("{}", engine::calibration_applied(lesson.used.scale)),
         fmt::format("{}", tokens::ScaledCounter::kMinScale),
         fmt::format("{}", tokens::ScaledCounter::kMaxScale),
         std::string(m->proven ? "true" : "false")});
    if (r.rows() == 0) return m->to;
    return {engine::calibration_applied(r.real(0, 0)), engine::added_applied(r.int64(0, 1)),
            engine::proven_applied(r.int64(0, 2))};
  }
  std::optional<engine::LearnedLimit> learned_limit(const std::string& endpoint,
                                                    const std::string& model) override {
    const db::pg::Result r = c_.query(
        "SELECT budget_tokens, stated_limit, coalesce(message, ''), learned_at FROM "
        "learned_limits WHERE endpoint = $1 AND model = $2",
        {param(endpoint), param(model)});
    if (r.rows() == 0) return std::nullopt;
    engine::LearnedLimit out;
    out.budget_tokens = r.int64(0, 0);
    if (!r.is_null(0, 1)) out.stated_limit = r.int64(0, 1);
    out.message = r.text(0, 2);
    out.learned_at = r.text(0, 3);
    return out;
  }
  int64_t learn_limit(const std::string& endpoint, const std::string& model,
                      const engine::LearnedLimit& limit) override {
    return c_
        .query(
            std::string("INSERT INTO learned_limits(endpoint, model, budget_tokens, stated_limit, "
                        "message) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (endpoint, model) DO "
                        "UPDATE SET ") +
                engine::kLearnLimitUpdate + ", learned_at = autonous_now() RETURNING budget_tokens",
            {param(endpoint), param(model), param(limit.budget_tokens), param(limit.stated_limit),
             param(limit.message)})
        .int64(0, 0);
  }

 private:
  db::pg::Connection& c_;
  PgProvider provider_;
  PgSummaryStore summaries_;
  PgSearchIndex search_;
};

}  // namespace

std::vector<common::Message> pg_messages(const db::pg::Result& r) {
  std::vector<common::Message> out;
  out.reserve(static_cast<size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) {
    common::Message m;
    m.history_id = r.int64(i, 0);
    m.role = common::parse_role(r.text(i, 1)).value_or(common::Role::kUser);
    m.content = r.text(i, 2);
    m.at = r.text(i, 3);
    if (r.columns() > 5) {  // tool_calls, tool_call_id ("" for NULL)
      m.tool_calls = r.text(i, 4);
      m.tool_call_id = r.text(i, 5);
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::unique_ptr<engine::EngineStorage> make_pg_storage(db::pg::Connection& c, bool* pair_indexed) {
  return std::make_unique<PgStorage>(c, pair_indexed);
}

}  // namespace autonous::store
