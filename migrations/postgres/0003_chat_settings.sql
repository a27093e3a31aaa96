-- 0003 (PostgreSQL): per-chat context settings; see migrations/sqlite/0003_chat_settings.sql.
CREATE TABLE chat_settings (
  chat_id         text   PRIMARY KEY CHECK (length(chat_id) BETWEEN 1 AND 256),
  settings        jsonb  NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object'),
  cleared_through bigint NOT NULL DEFAULT 0 CHECK (cleared_through >= 0),
  cleared_at      text,
  updated_at      text   NOT NULL DEFAULT autonous_now()
);

DROP VIEW context_compressions;
CREATE VIEW context_compressions AS
SELECT e.id, e.created_at, e.task_id, e.chat_id,
       (e.payload ->> 'original_count')::bigint   AS original_count,
       (e.payload ->> 'compressed_count')::bigint AS compressed_count,
       (e.payload ->> 'dropped_count')::bigint    AS dropped_count,
       (e.payload ->> 'truncated_count')::bigint  AS truncated_count,
       (e.payload ->> 'estimated_tokens')::bigint AS estimated_tokens,
       (e.payload ->> 'budget_tokens')::bigint    AS budget_tokens,
       e.payload ->> 'level'                      AS level,
       e.payload ->> 'strategy'                   AS strategy,
       (e.payload ->> 'tokens_before')::bigint    AS tokens_before,
       (e.payload ->> 'tokens_after')::bigint     AS tokens_after,
       (e.payload ->> 'rounds')::bigint           AS rounds,
       e.payload -> 'cut_messages'                AS cut_messages,
       e.payload -> 'summary_used'                AS summary_used
FROM events e WHERE e.type = 'context.compressed';
