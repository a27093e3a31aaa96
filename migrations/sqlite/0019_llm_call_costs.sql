-- 0019: the llm_calls view names each call's kind, model and cost (#31). Summary calls and
-- recall's embeddings calls now record llm.response events of their own ("call": summary |
-- embeddings; older events and the turn's completions: chat), each with "cost_usd" at the
-- presets' prices (config/models.json, MODELS_FILE; NULL when the model has no price). The view
-- keeps its columns and adds three at the end.
DROP VIEW llm_calls;
CREATE VIEW llm_calls AS
SELECT e.id, e.created_at, e.task_id, e.chat_id,
       json_extract(e.payload, '$.status')                   AS http_status,
       json_extract(e.payload, '$.latency_ms')               AS latency_ms,
       json_extract(e.payload, '$.estimated_tokens')         AS estimated_tokens,
       json_extract(e.payload, '$.usage.prompt_tokens')      AS prompt_tokens,
       json_extract(e.payload, '$.usage.completion_tokens')  AS completion_tokens,
       json_extract(e.payload, '$.usage.cached_tokens')      AS cached_tokens,
       json_extract(e.payload, '$.finish_reason')            AS finish_reason,
       coalesce(json_extract(e.payload, '$.call'), 'chat')   AS call,
       json_extract(e.payload, '$.model')                    AS model,
       json_extract(e.payload, '$.cost_usd')                 AS cost_usd
FROM events e WHERE e.type = 'llm.response';
