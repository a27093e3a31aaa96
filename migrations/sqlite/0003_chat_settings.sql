-- 0003: per-chat context settings (the engine issue).
-- `settings` holds only what the chat overrides (strategy, max_tokens, recent_messages, soft,
-- warn, hard, target); the environment gives the rest. `autonous chat set` validates it before
-- writing; the CHECK keeps hand-written rows at least a JSON object. `cleared_through`: history
-- rows with id <= this are left out of the context (`autonous chat clear`); they stay stored.
CREATE TABLE chat_settings (
  chat_id         TEXT    PRIMARY KEY CHECK (length(chat_id) BETWEEN 1 AND 256),
  settings        TEXT    NOT NULL DEFAULT '{}'
                          CHECK (json_valid(settings) AND json_type(settings) = 'object'),
  cleared_through INTEGER NOT NULL DEFAULT 0 CHECK (cleared_through >= 0),
  cleared_at      TEXT,
  updated_at      TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) WITHOUT ROWID;

-- For the sqlite3 shell: the engine's decision on each turn.
DROP VIEW context_compressions;
CREATE VIEW context_compressions AS
SELECT e.id, e.created_at, e.task_id, e.chat_id,
       json_extract(e.payload, '$.original_count')   AS original_count,
       json_extract(e.payload, '$.compressed_count') AS compressed_count,
       json_extract(e.payload, '$.dropped_count')    AS dropped_count,
       json_extract(e.payload, '$.truncated_count')  AS truncated_count,
       json_extract(e.payload, '$.estimated_tokens') AS estimated_tokens,
       json_extract(e.payload, '$.budget_tokens')    AS budget_tokens,
       json_extract(e.payload, '$.level')            AS level,
       json_extract(e.payload, '$.strategy')         AS strategy,
       json_extract(e.payload, '$.tokens_before')    AS tokens_before,
       json_extract(e.payload, '$.tokens_after')     AS tokens_after,
       json_extract(e.payload, '$.rounds')           AS rounds,
       json_extract(e.payload, '$.cut_messages')     AS cut_messages,
       json_extract(e.payload, '$.summary_used')     AS summary_used
FROM events e WHERE e.type = 'context.compressed';
