-- 0019: the llm_calls view names each call's kind, model and cost (#31). Summary calls and
-- recall's embeddings calls now record llm.response events of their own ("call": summary |
-- embeddings; older events and the turn's completions: chat), each with "cost_usd" at the
-- presets' prices (config/models.json, MODELS_FILE; NULL when the model has no price). The view
-- keeps its columns and adds three at the end (CREATE OR REPLACE allows exactly that).
CREATE OR REPLACE VIEW llm_calls AS
SELECT e.id, e.created_at, e.task_id, e.chat_id,
       (e.payload ->> 'status')::bigint                      AS http_status,
       (e.payload ->> 'latency_ms')::double precision        AS latency_ms,
       (e.payload ->> 'estimated_tokens')::bigint            AS estimated_tokens,
       (e.payload #>> '{usage,prompt_tokens}')::bigint       AS prompt_tokens,
       (e.payload #>> '{usage,completion_tokens}')::bigint   AS completion_tokens,
       (e.payload #>> '{usage,cached_tokens}')::bigint       AS cached_tokens,
       e.payload ->> 'finish_reason'                         AS finish_reason,
       coalesce(e.payload ->> 'call', 'chat')                AS call,
       e.payload ->> 'model'                                 AS model,
       CASE WHEN jsonb_typeof(e.payload -> 'cost_usd') = 'number'
            THEN (e.payload ->> 'cost_usd')::double precision END AS cost_usd
FROM events e WHERE e.type = 'llm.response';
