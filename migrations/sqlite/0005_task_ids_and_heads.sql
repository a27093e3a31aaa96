-- autonous:foreign-keys-off
-- 0005: task ids are never reused, and a chat's head stays on its running task.
-- 1. tasks gets AUTOINCREMENT: after a front end deletes the newest rows (DELETE FROM tasks
--    WHERE status = 'done'), the next task used to get a deleted id again, colliding with that
--    task's history pair and events. SQLite cannot add AUTOINCREMENT in place, so the table is
--    rebuilt (the documented 12-step procedure; the migrator turns foreign keys off around it
--    and checks them before commit). Ids continue from the highest one present.
--    It also gains first_claimed_at (Unix ms), where RETRY_BUDGET_SECONDS counts from, and
--    lease_expiries, the claims taken over from an expired lease (a crash loop's count).
-- 2. The head triggers pick a running task first: `autonous requeue` of an older failed task
--    used to make it the head while a newer task of the chat was still running, so two tasks
--    of one chat ran at once.
CREATE TABLE tasks_new (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  chat_id          TEXT    NOT NULL CHECK (length(chat_id) BETWEEN 1 AND 256),
  text             TEXT    NOT NULL CHECK (length(text) > 0),
  status           TEXT    NOT NULL DEFAULT 'queued'
                           CHECK (status IN ('queued', 'running', 'done', 'failed')),
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
  CHECK (status <> 'done' OR reply IS NOT NULL),
  CHECK (status <> 'failed' OR error IS NOT NULL)
);
INSERT INTO tasks_new SELECT id, chat_id, text, status, priority, attempts, reply, error,
  created_at, updated_at, run_after, lease_owner, lease_token, lease_expires_at, started_at,
  finished_at, NULL, 0 FROM tasks;
-- Ids continue after every id still referenced anywhere: rows deleted before this upgrade may
-- have left their history and events behind. (The sequence row is still named tasks_new here;
-- the rename below carries it over.)
INSERT INTO sqlite_sequence(name, seq)
  SELECT 'tasks_new', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'tasks_new');
UPDATE sqlite_sequence SET seq = max(seq, coalesce((SELECT max(id) FROM tasks), 0),
                                     coalesce((SELECT max(task_id) FROM history), 0),
                                     coalesce((SELECT max(task_id) FROM events), 0))
  WHERE name = 'tasks_new';
-- Tasks deleted from the sqlite3 shell (foreign keys off there by default) left history rows
-- pointing at them: what ON DELETE SET NULL would have done, done now.
UPDATE history SET task_id = NULL
  WHERE task_id IS NOT NULL AND task_id NOT IN (SELECT id FROM tasks);
DROP TABLE tasks;
ALTER TABLE tasks_new RENAME TO tasks;
CREATE INDEX tasks_active_by_chat ON tasks(chat_id, id) WHERE status IN ('queued', 'running');
CREATE INDEX tasks_by_status ON tasks(status, id);

-- The head of a chat: its running task if it has one, else its oldest queued task.
DELETE FROM chat_heads;
INSERT INTO chat_heads(chat_id, task_id, priority)
  SELECT chat_id, id, priority FROM (
    SELECT chat_id, id, priority,
           row_number() OVER (PARTITION BY chat_id ORDER BY status = 'running' DESC, id) AS n
    FROM tasks WHERE status IN ('queued', 'running'))
  WHERE n = 1;

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
