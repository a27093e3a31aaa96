-- 0014: tool calls in history (#29). An assistant row that called tools keeps the calls as the
-- wire writes them (`tool_calls`: a JSON array of {"id", "type": "function", "function":
-- {"name", "arguments"}}); each result is a `tool` row with the `tool_call_id` it answers. A task
-- that used tools writes, in its completion transaction: its user row, then per model step the
-- assistant row with its calls and one tool row per call, then its final assistant row. So the
-- one-row-per-role rule of history_task_role now holds for the user row and the final reply
-- (the rows without calls), and a call's result is stored once per task.
-- Rows from before this migration (a front end's `tool` rows included) have neither: a tool
-- row without its call goes out as user text, as before.
ALTER TABLE history ADD COLUMN tool_calls TEXT
  CHECK (tool_calls IS NULL OR (role = 'assistant' AND json_valid(tool_calls)
                                AND json_type(tool_calls) = 'array'));
ALTER TABLE history ADD COLUMN tool_call_id TEXT
  CHECK (tool_call_id IS NULL OR (role = 'tool' AND length(tool_call_id) BETWEEN 1 AND 256));
DROP INDEX history_task_role;
CREATE UNIQUE INDEX history_task_role ON history(task_id, role)
  WHERE task_id IS NOT NULL AND tool_calls IS NULL AND role <> 'tool';
CREATE UNIQUE INDEX history_task_tool_call ON history(task_id, tool_call_id)
  WHERE task_id IS NOT NULL AND tool_call_id IS NOT NULL;
