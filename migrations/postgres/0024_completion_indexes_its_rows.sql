-- 0024 (PostgreSQL): a turn's completion indexes its own two history rows for search in the
-- statement that writes them (#30), so they no longer pass through search_queue: the trigger
-- that queues a new history row passes over the rows of the task named by the transaction's
-- autonous.indexed_task (set_config(..., true), which the completion statement sets before it
-- writes them; backend/postgres/queue_statements.cpp). Queueing cost each completion two
-- trigger calls, two inserts with their index entries, a read and a delete of the queue's rows
-- and a round trip while the transaction held its locks. Every other write of history (a
-- front end's, a turn with tool steps, an edit, a delete, an UPDATE by hand) is queued as
-- before: its rows are indexed by the chat's next catch-up or by an idle slot.
DROP TRIGGER history_search_insert ON history;
CREATE TRIGGER history_search_insert AFTER INSERT ON history FOR EACH ROW
  WHEN (NEW.task_id IS NULL
        OR NEW.task_id::text IS DISTINCT FROM current_setting('autonous.indexed_task', true))
  EXECUTE FUNCTION autonous_search_queue('history');
