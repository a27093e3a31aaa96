-- 0015 (SQLite): nothing. On PostgreSQL, 0015 keeps a chat's tasks in id order when two front
-- ends queue into one chat at once (ids there are drawn before the insert takes any lock);
-- SQLite's writers run one at a time, so its ids are drawn in commit order already. The file
-- keeps both drivers at the same schema version.
SELECT 1;
