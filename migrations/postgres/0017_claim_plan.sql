-- 0017 (PostgreSQL): the claim of a queued head as a function whose plan does not hinge on the
-- tasks table's statistics (#30). 0016's claim was one statement joining chat_heads to tasks;
-- on tables the planner had no fresh statistics for (a fresh database, a backlog queued since
-- autovacuum's last ANALYZE) it hashed or materialised every queued task to take one: 250
-- buffers and 5 ms a claim with 12 288 queued (EXPLAIN (ANALYZE, BUFFERS);
-- bench/scale/manycore.py, 4 processes x 64 slots).
--
-- A cursor reads the claimable heads in (priority, id) order without locking them. For each,
-- the head's task is looked up by its key: a task not due yet (a retry's run_after) is passed
-- over unlocked. A due one's head row is then locked with SKIP LOCKED (and checked still
-- claimable: another claim may have taken it since the cursor's snapshot), then its task row
-- (FOR NO KEY UPDATE: what the update needs, so foreign keys' checks on it do not wait), in
-- that order as in 0016, so concurrent claimers neither wait nor take the same task. The
-- task is claimed (the UPDATE here, on the row just locked: a statement's snapshot from before
-- the function ran would not see a task committed meanwhile) and its head marked running.
-- Returns the claimed row (`was`: its status before, 'queued'), or nothing.
CREATE FUNCTION autonous_claim_head(now_ms bigint, owner text, token text, expires bigint)
RETURNS TABLE(id bigint, was text, chat_id text, text text, priority integer, attempts integer,
              first_claimed_at bigint, lease_expiries integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  heads CURSOR FOR SELECT h.chat_id AS chat, h.task_id AS task FROM chat_heads h
                   WHERE NOT h.running ORDER BY h.priority DESC, h.task_id;
  head record;
BEGIN
  FOR head IN heads LOOP
    CONTINUE WHEN NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = head.task
                              AND t.status = 'queued' AND t.run_after <= now_ms);
    PERFORM 1 FROM chat_heads h WHERE h.chat_id = head.chat AND h.task_id = head.task
      AND NOT h.running FOR UPDATE SKIP LOCKED;
    CONTINUE WHEN NOT FOUND;  -- another claim's, now or since the cursor's snapshot
    PERFORM 1 FROM tasks t WHERE t.id = head.task AND t.status = 'queued'
      AND t.run_after <= now_ms FOR NO KEY UPDATE SKIP LOCKED;  -- (foreign keys' checks pass)
    CONTINUE WHEN NOT FOUND;  -- a front end holds it: its head stays locked until we commit
    UPDATE tasks t SET status = 'running', attempts = t.attempts + 1, lease_owner = owner,
      lease_token = token, lease_expires_at = expires,
      started_at = coalesce(t.started_at, autonous_now()),
      first_claimed_at = coalesce(t.first_claimed_at, now_ms), updated_at = autonous_now()
    WHERE t.id = head.task
    RETURNING t.id, 'queued', t.chat_id, t.text, t.priority, t.attempts, t.first_claimed_at,
              t.lease_expiries
    INTO id, was, chat_id, text, priority, attempts, first_claimed_at, lease_expiries;
    IF NOT FOUND THEN  -- cannot be: the row is locked and was just checked
      RAISE EXCEPTION 'autonous_claim_head: task % vanished under its lock', head.task;
    END IF;
    UPDATE chat_heads h SET running = true WHERE h.chat_id = head.chat;
    RETURN NEXT;
    RETURN;
  END LOOP;
END $$;
