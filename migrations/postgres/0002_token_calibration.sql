-- 0002 (PostgreSQL): per-model scale for the token estimator (TOKEN_CALIBRATION=on).
CREATE TABLE token_calibration (
  model      text             PRIMARY KEY,
  scale      double precision NOT NULL CHECK (scale >= 1.0),
  raised     bigint           NOT NULL DEFAULT 0,   -- how many times it rose
  updated_at text             NOT NULL DEFAULT autonous_now()
);
