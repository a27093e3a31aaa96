-- 0023 (SQLite): nothing to change. PostgreSQL's 0023 has a worker's completion notify
-- autonous_task_ended after its commit (#30); SQLite has no notifications. Kept so that both
-- backends' schema versions stay equal.
SELECT 1;
