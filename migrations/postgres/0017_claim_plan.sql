-- 0017 (PostgreSQL): the claim's pick as a function whose plan does not depend on statistics
-- (#30). 0016's pick was one statement joining chat_heads to tasks; on tables the planner had
-- no fresh statistics for (a fresh database, a backlog queued in the last minute, before
-- autovacuum's ANALYZE) it hashed or materialised every queued task to take one: 250 buffers
-- and 5 ms a claim with 12 288 queued (EXPLAIN (ANALYZE, BUFFERS); bench/scale/manycore.py,
-- 4 processes x 64 slots). Here a cursor walks the claimable heads in order, one row a fetch,
-- and looks each head's task up by its key: a head row, then its task row, each locked with
-- SKIP LOCKED in that order as before, so concurrent claimers neither wait nor take the same
-- task, and a head whose task is not claimable (a retry's run_after ahead, a row locked by a
-- front end) is passed over. The head taken is marked running, as 0016's statement did.
-- Returns at most one row: the task's id, its status before the claim ('running' for a lease
-- that expired is never here: those come from the worker's second statement), its chat.
CREATE FUNCTION autonous_pick_head(now_ms bigint)
RETURNS TABLE(task_id bigint, was text, chat text) LANGUAGE plpgsql ROWS 1 AS $$
DECLARE
  heads CURSOR FOR SELECT h.chat_id, h.task_id FROM chat_heads h WHERE NOT h.running
                   ORDER BY h.priority DESC, h.task_id FOR UPDATE SKIP LOCKED;
  head record;
BEGIN
  OPEN heads;
  LOOP
    FETCH heads INTO head;  -- one row, one lock, at a time
    EXIT WHEN NOT FOUND;
    SELECT t.id, t.status INTO task_id, was FROM tasks t
      WHERE t.id = head.task_id AND t.status = 'queued' AND t.run_after <= now_ms
      FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
      UPDATE chat_heads SET running = true WHERE CURRENT OF heads;
      chat := head.chat_id;
      CLOSE heads;
      RETURN NEXT;
      RETURN;
    END IF;
  END LOOP;
  CLOSE heads;
END $$;
