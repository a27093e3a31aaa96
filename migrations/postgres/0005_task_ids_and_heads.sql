-- 0005 (PostgreSQL): the columns SQLite's 0005 added when it rebuilt `tasks`. Ids are never
-- reused here from the start (an identity column), and the head is the running task first
-- from 0001 on (autonous_recompute_head).
ALTER TABLE tasks ADD COLUMN first_claimed_at bigint;  -- Unix ms of the first claim
ALTER TABLE tasks ADD COLUMN lease_expiries integer NOT NULL DEFAULT 0;  -- leases taken over
