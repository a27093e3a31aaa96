#include "internal/backend/postgres/queue_statements.h"

#include <cstddef>
#include <string>
#include <vector>

#include "internal/backend/postgres/events.h"
#include "internal/events/event_types.h"

namespace autonous::queue::pg_statements {
namespace {

// The claim: see queue.h, in two statements (migrations/postgres/0016, 0017). kClaimHead takes
// the first claimable head and marks it running (autonous_claim_head, 0017); kClaimExpired takes
// a running head whose lease expired (tasks_lease_expiry). Both return the claimed row after the
// update, with its status before it (`running`: a reclaim).
const std::string kClaimUpdate =
    "UPDATE tasks SET status = 'running', attempts = tasks.attempts + 1, partial_reply = NULL,"
    " lease_owner = $2,"
    " lease_token = $3, lease_expires_at = $4, started_at = coalesce(tasks.started_at, "
    "autonous_now()),"
    " first_claimed_at = coalesce(tasks.first_claimed_at, $1),"
    " lease_expiries = tasks.lease_expiries + CASE WHEN pick.status = 'running' THEN 1 ELSE 0 END,"
    " updated_at = autonous_now() "
    "FROM pick WHERE tasks.id = pick.id "
    "RETURNING tasks.id, pick.status, tasks.chat_id, tasks.text, tasks.priority, tasks.attempts,"
    " tasks.first_claimed_at, tasks.lease_expiries, tasks.created_at";
// Each claim records its agent.started in the same statement (a round trip less a claim), with
// the payload queue_events.h's agent_started() gives on SQLite; the event's id is the last
// column.
const std::string kClaimed =
    "c(id, was, chat_id, text, priority, attempts, first_claimed_at, lease_expiries, created_at)";
const std::string kAgentStarted =
    ", e AS (INSERT INTO events(created_at, type, task_id, chat_id, payload) SELECT "
    "autonous_now(), '" +
    std::string(events::kAgentStarted) +
    "', c.id, c.chat_id, jsonb_build_object('attempt', c.attempts, 'worker_id', $2::text, "
    "'reclaimed', c.was = 'running', 'priority', c.priority) FROM c RETURNING id) "
    "SELECT c.*, (SELECT id FROM e) FROM c";
}  // namespace

const std::string kClaimHead =
    "WITH " + kClaimed + " AS (SELECT * FROM autonous_claim_head($1, $2, $3, $4))" + kAgentStarted;
// Only a chat's head: a row someone set running by hand behind its chat's head waits its turn.
const std::string kClaimExpired =
    "WITH pick AS ("
    " SELECT t.id, t.status FROM tasks t JOIN chat_heads h ON h.chat_id = t.chat_id"
    " AND h.task_id = t.id"
    " WHERE t.status = 'running' AND coalesce(t.lease_expires_at, 0) <= $1"
    " ORDER BY coalesce(t.lease_expires_at, 0) LIMIT 1 FOR UPDATE OF t SKIP LOCKED), " +
    kClaimed + " AS (" + kClaimUpdate + ")" + kAgentStarted;
const std::string kRenew =
    "UPDATE tasks SET lease_expires_at = $1 WHERE id = $2 AND lease_token = $3 AND status = "
    "'running'";
const std::string kComplete =
    "UPDATE tasks SET status = 'done', reply = $1, error = NULL, partial_reply = NULL, lease_owner "
    "= NULL, "
    "lease_token = NULL, lease_expires_at = NULL, finished_at = autonous_now(), "
    "updated_at = autonous_now() WHERE id = $2 AND lease_token = $3 AND status = 'running'";
const std::string kHistoryRow =
    "INSERT INTO history(chat_id, role, text, task_id, tool_calls, tool_call_id, token_count, "
    "token_counter) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const std::string kRetry =
    "UPDATE tasks SET status = 'queued', run_after = $1, error = $2, partial_reply = NULL, "
    "lease_owner = NULL, "
    "lease_token = NULL, lease_expires_at = NULL, updated_at = autonous_now() "
    "WHERE id = $3 AND lease_token = $4 AND status = 'running'";
const std::string kFail =
    "UPDATE tasks SET status = 'failed', error = $1, partial_reply = NULL, lease_owner = NULL, "
    "lease_token = NULL, "
    "lease_expires_at = NULL, finished_at = autonous_now(), updated_at = autonous_now() "
    "WHERE id = $2 AND lease_token = $3 AND status = 'running'";
const std::string kRelease =
    "UPDATE tasks SET status = 'queued', run_after = 0, attempts = greatest(attempts - 1, 0), "
    "partial_reply = NULL, lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, "
    "updated_at = autonous_now() WHERE id = $1 AND lease_token = $2 AND status = 'running'";
const std::string kNotifyAfterCommit = "set_config('autonous.notify_after_commit', 'on', true)";
const std::string kEndedNotify =
    "SELECT pg_notify('autonous_task_ended', json_build_object('task_id', t.id, 'chat_id', "
    "t.chat_id, 'status', 'done')::text) FROM reply_delivery d, unnest($1::bigint[], "
    "$2::text[]) AS t(id, chat_id) WHERE d.id = 1 AND d.notify";
const std::string kRequeue =
    "UPDATE tasks SET status = 'queued', attempts = 0, run_after = 0, finished_at = NULL, "
    "first_claimed_at = NULL, lease_expiries = 0, updated_at = autonous_now() "
    "WHERE id = $1 AND status = 'failed' RETURNING chat_id";

namespace {

// `sql` with each $N written $to[N - 1]: a statement made a part of another one with its own
// parameter numbers.
std::string renumbered(const std::string& sql, const std::vector<int>& to) {
  std::string out;
  for (size_t i = 0; i < sql.size(); ++i) {
    if (sql[i] != '$' || i + 1 >= sql.size() || sql[i + 1] < '0' || sql[i + 1] > '9') {
      out += sql[i];
      continue;
    }
    size_t n = 0;
    for (++i; i < sql.size() && sql[i] >= '0' && sql[i] <= '9'; ++i)
      n = n * 10 + static_cast<size_t>(sql[i] - '0');
    out += '$' + std::to_string(to.at(n - 1));
    --i;
  }
  return out;
}

}  // namespace

// A turn's completion without tool steps in one statement: the task done, then only if it was
// (the lease held), its events ($1..$6) and its two history rows, user first, indexed for search
// by the same statement (store::index_new_rows: their terms and the counts they add; the rows
// skip search_queue, whose trigger passes over the rows of the task named by
// autonous.indexed_task, set before they are written: migrations/postgres/0024); the statement's
// first value is 1, or 0 when the lease was lost (nothing written; a reply already stored by the
// new holder, or by this slot's own try before a lost connection, is not touched); its third
// whether other rows of the chat are queued for search (the turn's transaction indexes them).
// autonous.indexed_task is cleared again once the rows are written, so the transaction's later
// writes of history are queued as any. Parameters:
// $7 reply, $8 task id, $9 lease token, $10 chat, $11 user text, $12 and $13 the user text's and
// the reply's token counts, $14 their counter, $15 the rows' chat token, $16 and $17 the user
// text's and the reply's terms, $18 and $19 the overall counts' deltas (terms, rows), $20 to $22
// the chat's counts (chat tokens, terms, rows). It sets autonous.notify_after_commit for its
// transaction: the task's notification is the worker's, after the commit (kEndedNotify;
// migrations/postgres/0023); its second value says whether to send one (reply_delivery.notify).
// (Made on first use: the events' part is another file's.)
const std::string& complete_turn() {
  static const std::string sql =
      "WITH t AS (" + renumbered(kComplete, {7, 8, 9}) + " RETURNING tasks.id), e AS (" +
      events::append_all_statement("EXISTS (SELECT 1 FROM t)") +
      "), x AS MATERIALIZED (SELECT set_config('autonous.indexed_task', t.id::text, true) FROM "
      "t), h AS (INSERT INTO history(chat_id, role, text, task_id, token_count, token_counter) "
      "SELECT $10::text, v.role, v.text, t.id, v.n, $14::text FROM t, x, (VALUES ('user', "
      "$11::text, $12::bigint, 1), ('assistant', $7::text, $13::bigint, 2)) AS v(role, text, n, "
      "k) ORDER BY v.k RETURNING id, role), "
      "ht AS (INSERT INTO history_terms(rowid, chat, terms) SELECT h.id, $15::text, CASE h.role "
      "WHEN 'user' THEN $16::text ELSE $17::text END FROM h), "
      "d AS (INSERT INTO search_term_deltas(source, term, rows) SELECT 'history', u.term, u.n "
      "FROM t, unnest($18::text[], $19::bigint[]) AS u(term, n)), "
      "s AS (INSERT INTO search_term_rows(source, chat, term, rows) SELECT 'history', u.chat, "
      "u.term, u.n FROM t, unnest($20::text[], $21::text[], $22::bigint[]) AS u(chat, term, n) "
      "ON CONFLICT (source, chat, term) DO UPDATE SET rows = search_term_rows.rows + "
      "excluded.rows), "
      "z AS (SELECT set_config('autonous.indexed_task', '', true) FROM (SELECT count(*) FROM h) "
      "AS w) "
      "SELECT count(*), (SELECT notify FROM reply_delivery WHERE id = 1), EXISTS (SELECT 1 FROM "
      "search_queue q WHERE q.source = 'history' AND q.chat_id = $10) FROM t, z, (SELECT " +
      kNotifyAfterCommit + ") AS n";
  return sql;
}

}  // namespace autonous::queue::pg_statements
