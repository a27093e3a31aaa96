-- 0021 (SQLite): nothing to change. PostgreSQL's 0021 makes its claim function return the task's
-- created_at (#33); SQLite's claim is one UPDATE … RETURNING that names the column itself. Kept
-- so that both backends' schema versions stay equal.
SELECT 1;
