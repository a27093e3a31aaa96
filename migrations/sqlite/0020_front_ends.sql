-- autonous:foreign-keys-off
-- 0020: what front ends asked for (#32): cancel, a reply webhook's outbox, partial replies.
-- 1. tasks.status may be 'cancelled' (a front end's `UPDATE tasks SET status = 'cancelled'
--    WHERE id = ? AND status = 'queued'`, or `autonous cancel`, which also takes a running
--    task: its worker's writes are fenced on status = 'running' and commit nothing). SQLite
--    cannot change a CHECK in place, so the table is rebuilt as in 0005 (ids, sequence,
--    indexes and the head triggers kept). tasks.partial_reply holds a streamed reply's text so
--    far (STREAM_REPLIES).
-- 2. tasks_cancelled: every cancellation, whoever made it, gets its finished_at, loses its
--    lease and records the event task.cancelled {was, attempts} in the same transaction.
-- 3. reply_outbox: while a webhook is on (reply_delivery.webhook_until, Unix ms, pushed an hour
--    ahead every minute by each worker that has REPLY_WEBHOOK_URL: a worker without one never
--    turns it off for the others), every task that ends (done, failed, cancelled) leaves a row
--    holding the JSON body to POST, written in the transaction that ended it; workers deliver
--    the rows and delete them (reply.delivered), or give up after REPLY_WEBHOOK_MAX_ATTEMPTS
--    (gave_up_at set, reply.delivery_failed with final true).
-- 4. A task's ending is final: done and cancelled never change status again, and only a queued
--    or running task can be cancelled (a front end's UPDATE without `AND status = 'queued'`
--    cannot turn a reply into a cancellation).
CREATE TABLE tasks_new (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  chat_id          TEXT    NOT NULL CHECK (length(chat_id) BETWEEN 1 AND 256),
  text             TEXT    NOT NULL CHECK (length(text) > 0),
  status           TEXT    NOT NULL DEFAULT 'queued'
                   CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
  priority         INTEGER NOT NULL DEFAULT 0,
  attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  reply            TEXT,
  error            TEXT,
  created_at       TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at       TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  run_after        INTEGER NOT NULL DEFAULT 0,  -- Unix ms; not claimed before this
  lease_owner      TEXT,                        -- worker id holding the claim
  lease_token      TEXT,                        -- random per claim; completion is fenced on it
  lease_expires_at INTEGER,                     -- Unix ms
  started_at       TEXT,
  finished_at      TEXT,
  first_claimed_at INTEGER,                     -- Unix ms of the first claim: the retry budget
  lease_expiries   INTEGER NOT NULL DEFAULT 0,  -- claims taken over from an expired lease
  partial_reply    TEXT,                        -- a streamed reply so far (STREAM_REPLIES)
  CHECK (status <> 'done' OR reply IS NOT NULL),
  CHECK (status <> 'failed' OR error IS NOT NULL)
);
INSERT INTO tasks_new SELECT id, chat_id, text, status, priority, attempts, reply, error,
  created_at, updated_at, run_after, lease_owner, lease_token, lease_expires_at, started_at,
  finished_at, first_claimed_at, lease_expiries, NULL FROM tasks;
INSERT INTO sqlite_sequence(name, seq)
  SELECT 'tasks_new', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'tasks_new');
UPDATE sqlite_sequence SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence
                                                    WHERE name = 'tasks'), 0),
                                     coalesce((SELECT max(id) FROM tasks), 0))
  WHERE name = 'tasks_new';
DROP TABLE tasks;
DELETE FROM sqlite_sequence WHERE name = 'tasks';
ALTER TABLE tasks_new RENAME TO tasks;
CREATE INDEX tasks_active_by_chat ON tasks(chat_id, id) WHERE status IN ('queued', 'running');
CREATE INDEX tasks_by_status ON tasks(status, id);
CREATE INDEX tasks_by_chat ON tasks(chat_id, id);

CREATE TRIGGER tasks_head_insert AFTER INSERT ON tasks
WHEN new.status IN ('queued', 'running')
BEGIN
  INSERT INTO chat_heads(chat_id, task_id, priority) VALUES (new.chat_id, new.id, new.priority)
    ON CONFLICT(chat_id) DO NOTHING;
END;

CREATE TRIGGER tasks_head_update AFTER UPDATE OF status, priority ON tasks
WHEN (old.status IN ('queued', 'running')) <> (new.status IN ('queued', 'running'))
  OR old.priority <> new.priority
BEGIN
  DELETE FROM chat_heads WHERE chat_id = new.chat_id;
  INSERT INTO chat_heads(chat_id, task_id, priority)
    SELECT chat_id, id, priority FROM tasks
    WHERE chat_id = new.chat_id AND status IN ('queued', 'running')
    ORDER BY status = 'running' DESC, id LIMIT 1;
END;

CREATE TRIGGER tasks_head_delete AFTER DELETE ON tasks
WHEN old.status IN ('queued', 'running')
BEGIN
  DELETE FROM chat_heads WHERE chat_id = old.chat_id;
  INSERT INTO chat_heads(chat_id, task_id, priority)
    SELECT chat_id, id, priority FROM tasks
    WHERE chat_id = old.chat_id AND status IN ('queued', 'running')
    ORDER BY status = 'running' DESC, id LIMIT 1;
END;

-- One row: what the triggers below do when a task ends.
CREATE TABLE reply_delivery (
  id            INTEGER PRIMARY KEY CHECK (id = 1),
  webhook_until INTEGER NOT NULL DEFAULT 0,  -- Unix ms: endings leave outbox rows until then
  notify        INTEGER NOT NULL DEFAULT 1   -- PostgreSQL's NOTIFY autonous_task_ended; unused here
);
INSERT INTO reply_delivery(id) VALUES (1);

CREATE TABLE reply_outbox (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id     INTEGER NOT NULL,
  chat_id     TEXT    NOT NULL,
  status      TEXT    NOT NULL,                -- the ending it reports
  body        TEXT    NOT NULL,                -- the JSON POSTed, fixed when the task ended
  attempts    INTEGER NOT NULL DEFAULT 0,
  next_at     INTEGER NOT NULL DEFAULT 0,      -- Unix ms: not tried before this
  lease_until INTEGER NOT NULL DEFAULT 0,      -- Unix ms: a worker's POST in flight until then
  last_error  TEXT,
  created_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  gave_up_at  TEXT                             -- undeliverable: kept for the operator
);
CREATE INDEX reply_outbox_due ON reply_outbox(next_at, id) WHERE gave_up_at IS NULL;

CREATE TRIGGER tasks_ending_is_final BEFORE UPDATE OF status ON tasks
WHEN old.status <> new.status
 AND (old.status IN ('done', 'cancelled')
      OR (new.status = 'cancelled' AND old.status NOT IN ('queued', 'running')))
BEGIN
  SELECT RAISE(ABORT, 'a done or cancelled task is final, and only a queued or running task can be cancelled');
END;

CREATE TRIGGER tasks_cancelled AFTER UPDATE OF status ON tasks
WHEN new.status = 'cancelled' AND old.status <> 'cancelled'
BEGIN
  UPDATE tasks SET finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
                   updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
                   lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
                   partial_reply = NULL
    WHERE id = new.id;
  INSERT INTO events(type, task_id, chat_id, payload)
    VALUES ('task.cancelled', new.id, new.chat_id,
            json_object('was', old.status, 'attempts', new.attempts));
END;

CREATE TRIGGER tasks_ended_outbox AFTER UPDATE OF status ON tasks
WHEN new.status IN ('done', 'failed', 'cancelled') AND old.status <> new.status
 AND (SELECT webhook_until FROM reply_delivery WHERE id = 1)
     > CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
BEGIN
  INSERT INTO reply_outbox(task_id, chat_id, status, body)
    VALUES (new.id, new.chat_id, new.status,
            json_object('task_id', new.id, 'chat_id', new.chat_id, 'status', new.status,
                        'reply', CASE WHEN new.status = 'done' THEN new.reply END,
                        'error', CASE WHEN new.status = 'failed' THEN new.error END,
                        'attempts', new.attempts,
                        'finished_at', CASE WHEN new.status = 'cancelled'
                                              OR new.finished_at IS NULL
                                            THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
                                            ELSE new.finished_at END,
                        'idempotency_key', CAST(new.id AS TEXT)));
END;
