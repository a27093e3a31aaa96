-- 0017 (SQLite): nothing. On PostgreSQL, 0017 makes the claim's plan independent of the
-- planner's statistics (a function that walks the claimable heads by a cursor). SQLite's claim
-- is one statement over its own indexes; the file keeps both drivers at the same version.
SELECT 1;
