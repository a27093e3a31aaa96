-- 0006: the context engine's memory between turns (the engine-under-defaults issue).
-- context_state: one row per chat, written only when a compaction moves the start of the
-- prompt's verbatim part (between compactions the prompt only grows at its end, so a provider's
-- prompt cache serves it). `chain_start` is the clear point the row belongs to: after
-- `autonous chat clear` (which deletes the row) or a clear point it does not match, the engine
-- starts fresh. `summary_failures` / `summary_skips`: the summarize back-off (consecutive failed
-- summaries; compactions left that drop instead of calling the summarizer). `summary_from`:
-- after a front end deleted a chat's rows and their ids were given out again, the chat starts
-- over and its older summaries are set aside.
CREATE TABLE context_state (
  chat_id          TEXT    PRIMARY KEY CHECK (length(chat_id) BETWEEN 1 AND 256),
  chain_start      INTEGER NOT NULL DEFAULT 0,
  verbatim_after   INTEGER NOT NULL DEFAULT 0 CHECK (verbatim_after >= 0),
  compactions      INTEGER NOT NULL DEFAULT 0 CHECK (compactions >= 0),
  last_reason      TEXT    CHECK (last_reason IN ('window', 'threshold', 'overflow')),
  summary_failures INTEGER NOT NULL DEFAULT 0 CHECK (summary_failures >= 0),
  summary_skips    INTEGER NOT NULL DEFAULT 0 CHECK (summary_skips >= 0),
  summary_from     INTEGER NOT NULL DEFAULT 0,  -- summaries with a lower id are set aside
  updated_at       TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) WITHOUT ROWID;

-- learned_limits: the largest prompt an endpoint accepted for a model, learned from its
-- context-overflow answers (and the limit the answer stated), so later turns fit the first time.
-- `endpoint` is OPENAI_BASE_URL as configured; `budget_tokens` is in the engine's tokens.
CREATE TABLE learned_limits (
  endpoint       TEXT    NOT NULL,
  model          TEXT    NOT NULL,
  budget_tokens  INTEGER NOT NULL CHECK (budget_tokens > 0),
  stated_limit   INTEGER,          -- the window the server's answer stated, in its tokens
  message        TEXT,             -- the server's answer (clipped, key redacted)
  learned_at     TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (endpoint, model)
) WITHOUT ROWID;
