-- 0023 (PostgreSQL): a worker's completion notifies after its commit, not inside it (#30).
-- PostgreSQL serialises the commits of transactions that NOTIFY on one lock, held through each
-- commit's WAL flush (0016's note): with TASK_ENDED_NOTIFY on (the default), every completion
-- queued on it. A transaction that sets autonous.notify_after_commit (set_config(..., true): for
-- itself only) now ends its tasks without the trigger's NOTIFY, and its worker sends the same
-- notification, {"task_id", "chat_id", "status"} as json_build_object writes it, in a statement
-- of its own once the commit has returned, on the same session (backend/postgres/queue.cpp:
-- PgQueue::commit); that transaction writes only its commit record, without waiting for the
-- disk, so it holds the lock only for the notification itself. Every other
-- ending (a failure, `autonous cancel`, an UPDATE by hand) notifies from the trigger as before.
-- A worker that dies between its commit and the notification leaves it unsent: a notification
-- is a hint (docs/front-end.md), and `autonous wait` reads the task every second anyway.
CREATE OR REPLACE FUNCTION autonous_task_ended() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d reply_delivery%ROWTYPE;
BEGIN
  IF current_setting('autonous.bulk', true) = 'on' THEN
    RETURN NULL;
  END IF;
  IF NEW.status = 'cancelled' THEN
    INSERT INTO events(type, task_id, chat_id, payload)
      VALUES ('task.cancelled', NEW.id, NEW.chat_id,
              jsonb_build_object('was', OLD.status, 'attempts', NEW.attempts));
  END IF;
  SELECT * INTO d FROM reply_delivery WHERE id = 1;
  IF d.webhook_until > (extract(epoch FROM clock_timestamp()) * 1000)::bigint THEN
    INSERT INTO reply_outbox(task_id, chat_id, status, body)
      VALUES (NEW.id, NEW.chat_id, NEW.status,
              json_build_object('task_id', NEW.id, 'chat_id', NEW.chat_id, 'status', NEW.status,
                                'reply', CASE WHEN NEW.status = 'done' THEN NEW.reply END,
                                'error', CASE WHEN NEW.status = 'failed' THEN NEW.error END,
                                'attempts', NEW.attempts,
                                'finished_at', coalesce(NEW.finished_at, autonous_now()),
                                'idempotency_key', NEW.id::text)::text);
  END IF;
  IF d.notify AND current_setting('autonous.notify_after_commit', true) IS DISTINCT FROM 'on' THEN
    PERFORM pg_notify('autonous_task_ended',
                      json_build_object('task_id', NEW.id, 'chat_id', NEW.chat_id,
                                        'status', NEW.status)::text);
  END IF;
  RETURN NULL;
END $$;
