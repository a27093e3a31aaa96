-- The operator surface (#15): counts the dashboard and /metrics read once a second must not cost
-- a scan of every task ever done.
-- task_counts: tasks by status, kept by triggers (so a front end's bare INSERT, a requeue and an
-- operator's DELETE of old rows all count). Every worker and `autonous dashboard` read the same
-- numbers.
CREATE TABLE task_counts (
  status TEXT    PRIMARY KEY CHECK (status IN ('queued', 'running', 'done', 'failed')),
  n      INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO task_counts(status, n)
  SELECT s.status, (SELECT count(*) FROM tasks t WHERE t.status = s.status)
  FROM (SELECT 'queued' AS status UNION ALL SELECT 'running' UNION ALL SELECT 'done'
        UNION ALL SELECT 'failed') s;

CREATE TRIGGER task_counts_insert AFTER INSERT ON tasks BEGIN
  UPDATE task_counts SET n = n + 1 WHERE status = new.status;
END;
CREATE TRIGGER task_counts_delete AFTER DELETE ON tasks BEGIN
  UPDATE task_counts SET n = n - 1 WHERE status = old.status;
END;
CREATE TRIGGER task_counts_update AFTER UPDATE OF status ON tasks
WHEN old.status <> new.status
BEGIN
  UPDATE task_counts SET n = n - 1 WHERE status = old.status;
  UPDATE task_counts SET n = n + 1 WHERE status = new.status;
END;

-- A chat's tasks of any status (the dashboard's chat page: failed and open tasks, and whether a
-- chat exists at all when none of its tasks was answered). Status updates do not touch it.
CREATE INDEX tasks_by_chat ON tasks(chat_id, id);
