-- 0011 (PostgreSQL): one notification per task that became claimable, so a transaction that
-- queues tasks of several chats (a multi-row INSERT, a front end's batch) wakes as many idle
-- workers. Until 0010 every notification had the payload '', and PostgreSQL folds identical
-- notifications of one transaction into one: such a batch woke one slot and the others waited
-- out POLL_INTERVAL_MS. Now the payload is the id of the task that became claimable (distinct
-- per task; the same task notified twice in a transaction still folds into one). A new task
-- is notified by autonous_recompute_head when it becomes its chat's head (a task queued behind
-- its chat's head is not claimable and wakes nobody), so the per-statement insert trigger goes.
--
-- Also: bulk mode. The head recompute takes one advisory lock per chat, held to the end of the
-- transaction, from a lock table sized by max_locks_per_transaction: one transaction that queues
-- tasks for tens of thousands of chats ran out of it ("out of shared memory"; measured with the
-- defaults: 10 000 chats in one INSERT worked, 50 000 did not). A transaction that holds
-- LOCK TABLE tasks IN SHARE ROW EXCLUSIVE MODE (no other transaction can change tasks
-- meanwhile) may SET LOCAL autonous.bulk = 'on' to skip the per-chat locks; `autonous copy`
-- does. The function checks the table lock once per transaction.
CREATE OR REPLACE FUNCTION autonous_recompute_head(c text, inserted bigint DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  current_id bigint;
  head_id    bigint;
  head_pri   integer;
BEGIN
  IF current_setting('autonous.bulk', true) = 'on' THEN
    IF current_setting('autonous.bulk_checked', true) IS DISTINCT FROM txid_current()::text THEN
      IF NOT EXISTS (SELECT 1 FROM pg_locks WHERE pid = pg_backend_pid() AND granted
                     AND locktype = 'relation' AND relation = 'tasks'::regclass
                     AND mode IN ('ShareRowExclusiveLock', 'ExclusiveLock',
                                  'AccessExclusiveLock')) THEN
        RAISE EXCEPTION 'autonous.bulk needs LOCK TABLE tasks IN SHARE ROW EXCLUSIVE MODE first';
      END IF;
      PERFORM set_config('autonous.bulk_checked', txid_current()::text, true);
    END IF;
  ELSE
    PERFORM pg_advisory_xact_lock(hashtextextended('autonous.chat_heads:' || c, 0));
  END IF;
  SELECT task_id INTO current_id FROM chat_heads WHERE chat_id = c FOR UPDATE;
  IF inserted IS NOT NULL AND current_id IS NOT NULL
     AND (current_id < inserted
          OR EXISTS (SELECT 1 FROM tasks WHERE id = current_id AND status = 'running')) THEN
    RETURN;
  END IF;
  SELECT id, priority INTO head_id, head_pri FROM tasks
    WHERE chat_id = c AND status = 'running' ORDER BY id LIMIT 1;
  IF head_id IS NULL THEN
    SELECT id, priority INTO head_id, head_pri FROM tasks
      WHERE chat_id = c AND status IN ('queued', 'running') AND status = 'queued'
      ORDER BY id LIMIT 1;
  END IF;
  IF head_id IS NULL THEN
    DELETE FROM chat_heads WHERE chat_id = c;
  ELSE
    INSERT INTO chat_heads(chat_id, task_id, priority) VALUES (c, head_id, head_pri)
      ON CONFLICT (chat_id) DO UPDATE SET task_id = excluded.task_id, priority = excluded.priority
      WHERE (chat_heads.task_id, chat_heads.priority)
            IS DISTINCT FROM (excluded.task_id, excluded.priority);
    -- A chat's new task, or its next one after the previous finished: wake a worker.
    IF current_id IS DISTINCT FROM head_id THEN
      PERFORM pg_notify('autonous_tasks', head_id::text);
    END IF;
  END IF;
END $$;

-- A task queued again (a retry, a release, a requeue).
CREATE OR REPLACE FUNCTION autonous_tasks_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('autonous_tasks', NEW.id::text);
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS tasks_notify_insert ON tasks;
