-- 0012: the estimator's calibration per endpoint and model, in both directions (#28). The scale
-- may fall below 1.0 (an estimate above what the server counts is lowered toward it) and is kept
-- per endpoint (engine::endpoint_key) as well as per model: the same model name behind two
-- servers may be counted differently. Rows from 0002 keep their scale under the endpoint '',
-- which applies to a model until its endpoint has a row of its own.
CREATE TABLE token_calibration_0012 (
  endpoint   TEXT    NOT NULL DEFAULT '',
  model      TEXT    NOT NULL,
  scale      REAL    NOT NULL CHECK (scale > 0),
  raised     INTEGER NOT NULL DEFAULT 0,   -- how many times it rose
  lowered    INTEGER NOT NULL DEFAULT 0,   -- how many times it fell
  updated_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (endpoint, model)
);
INSERT INTO token_calibration_0012(endpoint, model, scale, raised, updated_at)
  SELECT '', model, scale, raised, updated_at FROM token_calibration;
DROP TABLE token_calibration;
ALTER TABLE token_calibration_0012 RENAME TO token_calibration;
