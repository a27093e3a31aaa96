-- 0011: on PostgreSQL, one notification per task that became claimable (migrations/postgres/
-- 0011). SQLite has no notifications; this version exists so both backends count the same.
SELECT 1;
