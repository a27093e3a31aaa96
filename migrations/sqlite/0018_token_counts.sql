-- 0018: each history row's token count, stored once (#30). The worker counts a message's text
-- when it writes the row (or, for a row a front end inserted, the first time it reads it) with
-- its exact counter and stores the figure with the counter's name; a later turn, in any process,
-- reads the figure instead of counting the text again. A count belongs to one counter: a row
-- counted by another counter (another model's) is counted again and the figure replaced.
-- Editing a row's text clears its count. The estimating counters store nothing (they are cheaper
-- than the lookup).
ALTER TABLE history ADD COLUMN token_count INTEGER CHECK (token_count >= 0);
ALTER TABLE history ADD COLUMN token_counter TEXT;

CREATE TRIGGER history_token_count_edited AFTER UPDATE OF text ON history
  WHEN NEW.text IS NOT OLD.text AND NEW.token_count IS OLD.token_count
    AND NEW.token_count IS NOT NULL
BEGIN
  UPDATE history SET token_count = NULL, token_counter = NULL WHERE id = NEW.id;
END;
