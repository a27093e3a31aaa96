-- 0024 (SQLite): nothing to change. PostgreSQL's 0024 has a turn's completion index its own
-- history rows instead of queueing them (#30); SQLite, with one writer at a time, indexes the
-- turn's queued rows in the completion's transaction as before. Kept so that both backends'
-- schema versions stay equal.
SELECT 1;
