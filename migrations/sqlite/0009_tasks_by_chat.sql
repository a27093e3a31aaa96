-- The operator surface (#15): a chat's tasks of any status, in order. The dashboard's chat page
-- lists a chat's failed and open tasks and must find a chat none of whose tasks was answered;
-- without it both scan every task. Status updates do not touch it (only enqueues write it).
-- (Counts by status are not kept by triggers, which would add a write to every claim and
-- completion: internal/ops/task_counts.h bounds what counting costs instead.)
CREATE INDEX tasks_by_chat ON tasks(chat_id, id);
