-- 0001: the queue, the conversation history and the event log.
-- Times a person reads are ISO-8601 UTC text; times the queue compares are integer Unix ms.

CREATE TABLE tasks (
  id               INTEGER PRIMARY KEY,
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
  CHECK (status <> 'done' OR reply IS NOT NULL),
  CHECK (status <> 'failed' OR error IS NOT NULL)
);
-- Active tasks of a chat in queue order: finds a chat's head with one seek.
CREATE INDEX tasks_active_by_chat ON tasks(chat_id, id) WHERE status IN ('queued', 'running');
CREATE INDEX tasks_by_status ON tasks(status, id);

-- One row per chat that has queued or running tasks: its oldest active task (the only one that
-- may run, which gives per-chat ordering). Triggers keep it exact, so a front end's bare INSERT
-- INTO tasks works and a claim scans chats, never a chat's backlog.
CREATE TABLE chat_heads (
  chat_id  TEXT PRIMARY KEY,
  task_id  INTEGER NOT NULL,
  priority INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX chat_heads_order ON chat_heads(priority DESC, task_id);

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
    WHERE chat_id = new.chat_id AND status IN ('queued', 'running') ORDER BY id LIMIT 1;
END;

CREATE TRIGGER tasks_head_delete AFTER DELETE ON tasks
WHEN old.status IN ('queued', 'running')
BEGIN
  DELETE FROM chat_heads WHERE chat_id = old.chat_id;
  INSERT INTO chat_heads(chat_id, task_id, priority)
    SELECT chat_id, id, priority FROM tasks
    WHERE chat_id = old.chat_id AND status IN ('queued', 'running') ORDER BY id LIMIT 1;
END;

CREATE TABLE history (
  id         INTEGER PRIMARY KEY,
  chat_id    TEXT    NOT NULL CHECK (length(chat_id) BETWEEN 1 AND 256),
  role       TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
  text       TEXT    NOT NULL,
  task_id    INTEGER REFERENCES tasks(id) ON DELETE SET NULL,
  created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX history_by_chat ON history(chat_id, id);
-- At most one user and one assistant row per task, whatever happens.
CREATE UNIQUE INDEX history_task_role ON history(task_id, role) WHERE task_id IS NOT NULL;

CREATE TABLE events (
  id         INTEGER PRIMARY KEY,
  created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  type       TEXT    NOT NULL,
  task_id    INTEGER,
  chat_id    TEXT,
  parent_id  INTEGER REFERENCES events(id),
  payload    TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(payload))
);
CREATE INDEX events_by_task ON events(task_id, id);
CREATE INDEX events_by_type ON events(type, id);

-- For the sqlite3 shell: one row per finished LLM call with the figures operators ask about.
CREATE VIEW llm_calls AS
SELECT e.id, e.created_at, e.task_id, e.chat_id,
       json_extract(e.payload, '$.status')                   AS http_status,
       json_extract(e.payload, '$.latency_ms')               AS latency_ms,
       json_extract(e.payload, '$.estimated_tokens')         AS estimated_tokens,
       json_extract(e.payload, '$.usage.prompt_tokens')      AS prompt_tokens,
       json_extract(e.payload, '$.usage.completion_tokens')  AS completion_tokens,
       json_extract(e.payload, '$.usage.cached_tokens')      AS cached_tokens,
       json_extract(e.payload, '$.finish_reason')            AS finish_reason
FROM events e WHERE e.type = 'llm.response';

-- For the sqlite3 shell: what each turn's context compression did.
CREATE VIEW context_compressions AS
SELECT e.id, e.created_at, e.task_id, e.chat_id,
       json_extract(e.payload, '$.original_count')   AS original_count,
       json_extract(e.payload, '$.compressed_count') AS compressed_count,
       json_extract(e.payload, '$.dropped_count')    AS dropped_count,
       json_extract(e.payload, '$.truncated_count')  AS truncated_count,
       json_extract(e.payload, '$.estimated_tokens') AS estimated_tokens,
       json_extract(e.payload, '$.budget_tokens')    AS budget_tokens
FROM events e WHERE e.type = 'context.compressed';
