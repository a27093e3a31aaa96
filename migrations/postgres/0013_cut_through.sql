-- 0013 (PostgreSQL): which of a chat's history messages the prompt carries cut (#28;
-- migrations/sqlite/0013 says why).
ALTER TABLE context_state ADD COLUMN cut_through bigint NOT NULL DEFAULT 0 CHECK (cut_through >= 0);
