-- 0002: per-model scale for the token estimator (TOKEN_CALIBRATION=on). It only rises: each time
-- the API counts more prompt tokens than the scaled estimate, scale grows to cover it.
CREATE TABLE token_calibration (
  model      TEXT PRIMARY KEY,
  scale      REAL    NOT NULL CHECK (scale >= 1.0),
  raised     INTEGER NOT NULL DEFAULT 0,   -- how many times it rose
  updated_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
