-- 0015 (PostgreSQL): a chat's tasks run in id order also when two front ends queue into one
-- chat at the same moment. A task's id comes from the identity sequence when its row is built,
-- before any lock: front end A draws 10, front end B draws 11 and commits first, a worker claims
-- 11 as the chat's head and runs it, and A's 10 commits behind a running head and runs after 11
-- (QueueTest.EnqueuersAndClaimersOnOneChatKeepOrderAndNeverRunTwoAtOnce failed about 1 run in
-- 60 under load). Now a row trigger before the insert takes the chat's advisory lock (the one
-- autonous_recompute_head takes, held to the end of the transaction), so inserts into one chat
-- wait for each other, and, holding it, a task whose id is below one its chat already has gets
-- the next id instead. The common insert costs one probe of tasks_by_chat and keeps its id.
-- Bulk mode (`autonous copy`, under the table's lock, nothing concurrent) keeps ids as given;
-- autonous_recompute_head still checks that lock. SQLite needs nothing: its writers run one at
-- a time, so ids are drawn in commit order there (its 0015 is empty).
CREATE FUNCTION autonous_tasks_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('autonous.bulk', true) = 'on' THEN
    RETURN NEW;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('autonous.chat_heads:' || NEW.chat_id, 0));
  IF EXISTS (SELECT 1 FROM tasks WHERE chat_id = NEW.chat_id AND id > NEW.id) THEN
    NEW.id := nextval(pg_get_serial_sequence('tasks', 'id'));
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER tasks_order_insert BEFORE INSERT ON tasks
  FOR EACH ROW EXECUTE FUNCTION autonous_tasks_order();
