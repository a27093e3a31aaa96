-- 0016 (PostgreSQL), scale-out: a claim that reads only claimable heads, completions that do
-- not serialise on NOTIFY, and a write buffer without a hot key (#30). Measured before, with
-- 4 processes x 64 slots, stub 1 s, durable, on 2 cores: 117 tasks/s of an ideal 256; the claim
-- statement averaged 103 ms, 93 % of the server's statement time (bench/scale/manycore.py). A
-- chat's head is its running task while one runs, and the claim ordered every head by
-- (priority, id): the running heads, the oldest ids, came first, so each claim walked past all
-- of them (one per busy slot of every process) before it found a queued one.
--
-- 1. chat_heads.running: true while the head is running. The claim reads the partial index of
--    heads that are not running (chat_heads_claimable) and marks the head it takes; a head
--    that stops running (done, failed, queued again) is recomputed by the trigger as before.
-- 2. A lease that expired is found through tasks_lease_expiry (running tasks by expiry), not
--    by walking heads, by a second statement the worker runs now and then (PgQueue).
-- 3. A completion does not NOTIFY. PostgreSQL commits the transactions that issued NOTIFY one
--    at a time (the `Lock:object` wait the issue measured), each waiting for its own WAL flush.
--    The worker that completes a task claims in the same transaction: it takes its chat's next
--    task itself unless an older or more urgent head was waiting (then it wakes an idle slot of
--    its own process; another process's finds the task at its next poll, POLL_INTERVAL_MS). A
--    completion that claims nothing after it (a stopping worker) notifies from the worker
--    (PgQueue::before_commit). New tasks, retries, releases, requeues and failures still notify.
--    A task set 'done' by hand notifies nobody: its chat's next task waits for a poll.
-- Nothing writes tasks meanwhile (an older worker's retry must not commit between the backfill
-- and the new trigger). A worker's statement that locks chat_heads first can still deadlock
-- with this; PostgreSQL then rolls one back and the migration says to run it again.
LOCK TABLE tasks IN SHARE ROW EXCLUSIVE MODE;
ALTER TABLE chat_heads ADD COLUMN running boolean NOT NULL DEFAULT false;
UPDATE chat_heads h SET running = true FROM tasks t WHERE t.id = h.task_id AND t.status = 'running';
DROP INDEX chat_heads_order;
CREATE INDEX chat_heads_claimable ON chat_heads(priority DESC, task_id) WHERE NOT running;
CREATE INDEX tasks_lease_expiry ON tasks((coalesce(lease_expires_at, 0))) WHERE status = 'running';

DROP FUNCTION autonous_recompute_head(text, bigint);
-- As 0011's, plus: `running` kept, and `wake` (false for a completion) decides the notification.
CREATE FUNCTION autonous_recompute_head(c text, inserted bigint DEFAULT NULL,
                                        wake boolean DEFAULT true)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  current_id  bigint;
  head_id     bigint;
  head_pri    integer;
  head_running boolean := true;
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
    head_running := false;
    SELECT id, priority INTO head_id, head_pri FROM tasks
      WHERE chat_id = c AND status IN ('queued', 'running') AND status = 'queued'
      ORDER BY id LIMIT 1;
  END IF;
  IF head_id IS NULL THEN
    DELETE FROM chat_heads WHERE chat_id = c;
  ELSE
    INSERT INTO chat_heads(chat_id, task_id, priority, running)
      VALUES (c, head_id, head_pri, head_running)
      ON CONFLICT (chat_id) DO UPDATE SET task_id = excluded.task_id,
        priority = excluded.priority, running = excluded.running
      WHERE (chat_heads.task_id, chat_heads.priority, chat_heads.running)
            IS DISTINCT FROM (excluded.task_id, excluded.priority, excluded.running);
    IF wake AND NOT head_running AND current_id IS DISTINCT FROM head_id THEN
      PERFORM pg_notify('autonous_tasks', head_id::text);
    END IF;
  END IF;
END $$;

CREATE OR REPLACE FUNCTION autonous_tasks_head() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    -- A hand-written running row may have to become the head: the full rule for it.
    PERFORM autonous_recompute_head(NEW.chat_id,
                                    CASE WHEN NEW.status = 'queued' THEN NEW.id END);
    RETURN NULL;
  END IF;
  -- A task done: its worker claims in the same transaction (see above), no notification.
  PERFORM autonous_recompute_head(OLD.chat_id, NULL,
                                  NOT (TG_OP = 'UPDATE' AND NEW.status = 'done'));
  IF TG_OP = 'UPDATE' AND NEW.chat_id <> OLD.chat_id THEN
    PERFORM autonous_recompute_head(NEW.chat_id);
  END IF;
  RETURN NULL;
END $$;

-- Also when a running task is queued again (a retry, a release): its head is claimable again.
-- A claim (queued to running) does not fire it: the claim marks its head itself.
DROP TRIGGER tasks_head_update ON tasks;
CREATE TRIGGER tasks_head_update AFTER UPDATE OF status, priority, chat_id ON tasks
  FOR EACH ROW WHEN ((OLD.status IN ('queued', 'running')) <> (NEW.status IN ('queued', 'running'))
                     OR (OLD.status = 'running' AND NEW.status = 'queued')
                     OR OLD.priority <> NEW.priority OR OLD.chat_id <> NEW.chat_id)
  EXECUTE FUNCTION autonous_tasks_head();

-- 4. The overall term counts' write buffer (0010) without its identity key: every completion
--    inserts its deltas there, and with 8 processes x 32 slots (16 cores) those inserts waited
--    on the sequence's page and the key index's rightmost page (`LWLock:BufferContent`, 6.4 ms
--    an insert). The fold takes its batch by ctid; order never mattered (it sums). The column
--    stays, nullable (a binary from before 0016 still running folds by it: it folds nothing and
--    leaves the rows to a new one); REPLICA IDENTITY FULL lets the fold's DELETE through a
--    publication that replicates deletes, now that the table has no key.
ALTER TABLE search_term_deltas DROP CONSTRAINT search_term_deltas_pkey;
ALTER TABLE search_term_deltas ALTER COLUMN id DROP IDENTITY;
ALTER TABLE search_term_deltas ALTER COLUMN id DROP NOT NULL;
ALTER TABLE search_term_deltas REPLICA IDENTITY FULL;
