-- 0014 (PostgreSQL): tool calls in history (#29; migrations/sqlite/0014 says why). `tool_calls`
-- is text (the calls exactly as the model wrote them, replayed byte for byte), checked as a
-- JSON array.
ALTER TABLE history ADD COLUMN tool_calls text
  CHECK (tool_calls IS NULL OR (role = 'assistant' AND jsonb_typeof(tool_calls::jsonb) = 'array'));
ALTER TABLE history ADD COLUMN tool_call_id text
  CHECK (tool_call_id IS NULL OR (role = 'tool' AND length(tool_call_id) BETWEEN 1 AND 256));
DROP INDEX history_task_role;
CREATE UNIQUE INDEX history_task_role ON history(task_id, role)
  WHERE task_id IS NOT NULL AND tool_calls IS NULL AND role <> 'tool';
CREATE UNIQUE INDEX history_task_tool_call ON history(task_id, tool_call_id)
  WHERE task_id IS NOT NULL AND tool_call_id IS NOT NULL;
