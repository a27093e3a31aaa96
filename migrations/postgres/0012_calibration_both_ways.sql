-- 0012 (PostgreSQL): the estimator's calibration per endpoint and model, in both directions
-- (#28; migrations/sqlite/0012 says why). Rows from 0002 keep their scale under the endpoint ''.
ALTER TABLE token_calibration ADD COLUMN endpoint text NOT NULL DEFAULT '';
ALTER TABLE token_calibration ADD COLUMN lowered bigint NOT NULL DEFAULT 0;
ALTER TABLE token_calibration DROP CONSTRAINT token_calibration_scale_check;
ALTER TABLE token_calibration ADD CONSTRAINT token_calibration_scale_check CHECK (scale > 0);
ALTER TABLE token_calibration DROP CONSTRAINT token_calibration_pkey;
ALTER TABLE token_calibration ADD PRIMARY KEY (endpoint, model);
