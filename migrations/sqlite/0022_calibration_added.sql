-- 0022: the tokens a server adds to every prompt unseen (a proxy's or a gateway's own system
-- prompt), learned per endpoint and model beside the calibration's scale (#28,
-- engine/calibration_store.h). 0 for every existing row: nothing added until a chat's growth
-- shows it.
ALTER TABLE token_calibration ADD COLUMN added_tokens INTEGER NOT NULL DEFAULT 0
  CHECK (added_tokens >= 0);
