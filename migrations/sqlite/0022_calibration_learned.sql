-- 0022: what the calibration learns beside its scale, per endpoint and model (#28,
-- engine/calibration_store.h):
-- - added_tokens: the tokens a server adds to every prompt unseen (a proxy's or a gateway's own
--   system prompt), learned from chats' growth; 0 for every existing row, nothing added until a
--   chat's growth shows it;
-- - proven_raw: the largest prompt, in raw estimate tokens, the server was seen to take whole
--   (worker/window_probe.h: how far a model of unknown window is trusted), so that a restarted
--   worker or another process starts from it; 0: none yet.
ALTER TABLE token_calibration ADD COLUMN added_tokens INTEGER NOT NULL DEFAULT 0
  CHECK (added_tokens >= 0);
ALTER TABLE token_calibration ADD COLUMN proven_raw INTEGER NOT NULL DEFAULT 0
  CHECK (proven_raw >= 0);
