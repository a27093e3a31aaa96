-- 0004: LLM summaries for the `summarize` strategy (the summaries issue).
-- Rows are only ever added: a summary never replaces history (every history row stays) and a
-- new summary never overwrites an old one. A chat's summaries form chains; a chain starts at the
-- chat's clear point (`chain_start` = chat_settings.cleared_through when it was written), so
-- `autonous chat clear` starts a new chain. The newest row of the current chain is the one in use.
CREATE TABLE context_summaries (
  id               INTEGER PRIMARY KEY,
  chat_id          TEXT    NOT NULL CHECK (length(chat_id) BETWEEN 1 AND 256),
  chain_start      INTEGER NOT NULL DEFAULT 0,
  covers_through   INTEGER NOT NULL,          -- history id: every chain message up to it is folded in
  previous_id      INTEGER REFERENCES context_summaries(id),
  messages_covered INTEGER NOT NULL,          -- newly folded in by this summary
  text             TEXT    NOT NULL CHECK (length(text) > 0),
  tokens           INTEGER NOT NULL,          -- of the summary message, by the engine's counter
  model            TEXT    NOT NULL,
  usage            TEXT    CHECK (usage IS NULL OR json_valid(usage)),  -- the API's usage, all calls
  created_at       TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX context_summaries_by_chat ON context_summaries(chat_id, chain_start, id);
