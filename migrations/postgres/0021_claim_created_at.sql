-- 0021 (PostgreSQL): the claim also returns the task's created_at (#33), so a worker knows how
-- long a task waited and how long the user waited for its reply (turn.started's queued_ms,
-- turn.completed's time_to_reply_ms, the metric autonous_task_time_to_reply_seconds). A
-- function's result type cannot change in place: autonous_claim_head is dropped and created again
-- as in 0017, with one more column. (SQLite's claim is one UPDATE … RETURNING: its 0021 changes
-- nothing.)
DROP FUNCTION autonous_claim_head(bigint, text, text, bigint);

CREATE FUNCTION autonous_claim_head(now_ms bigint, owner text, token text, expires bigint)
RETURNS TABLE(id bigint, was text, chat_id text, text text, priority integer, attempts integer,
              first_claimed_at bigint, lease_expiries integer, created_at text)
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
              t.lease_expiries, t.created_at
    INTO id, was, chat_id, text, priority, attempts, first_claimed_at, lease_expiries, created_at;
    IF NOT FOUND THEN  -- cannot be: the row is locked and was just checked
      RAISE EXCEPTION 'autonous_claim_head: task % vanished under its lock', head.task;
    END IF;
    UPDATE chat_heads h SET running = true WHERE h.chat_id = head.chat;
    RETURN NEXT;
    RETURN;
  END LOOP;
END $$;
