-- 0016 (SQLite): nothing. On PostgreSQL, 0016 lets the claim read only claimable heads and
-- drops the notification on completion (concurrent claimers there walked past every running
-- head, and NOTIFY serialises commits). SQLite runs one writer at a time and has no NOTIFY;
-- the file keeps both drivers at the same schema version.
SELECT 1;
