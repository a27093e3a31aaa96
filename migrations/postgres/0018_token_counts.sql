-- 0018: each history row's token count, stored once (#30). The worker counts a message's text
-- when it writes the row (or, for a row a front end inserted, the first time it reads it) with
-- its exact counter and stores the figure with the counter's name; a later turn, in any process,
-- reads the figure instead of counting the text again. A count belongs to one counter: a row
-- counted by another counter (another model's) is counted again and the figure replaced.
-- Editing a row's text clears its count. The estimating counters store nothing (they are cheaper
-- than the lookup). Nullable columns without a default, and a check NOT VALID (every existing
-- row is NULL), neither rewrite nor scan the table: a long history migrates at once.
ALTER TABLE history ADD COLUMN token_count integer, ADD COLUMN token_counter text;
ALTER TABLE history ADD CONSTRAINT history_token_count_check CHECK (token_count >= 0) NOT VALID;

CREATE FUNCTION autonous_token_count_edited() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.text IS DISTINCT FROM OLD.text AND NEW.token_count IS NOT DISTINCT FROM OLD.token_count
  THEN
    NEW.token_count := NULL;
    NEW.token_counter := NULL;
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER history_token_count_edited BEFORE UPDATE OF text ON history
  FOR EACH ROW EXECUTE FUNCTION autonous_token_count_edited();
