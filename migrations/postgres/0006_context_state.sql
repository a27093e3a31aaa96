-- 0006 (PostgreSQL): the engine's memory between turns; see migrations/sqlite/0006_context_state.sql.
CREATE TABLE context_state (
  chat_id          text   PRIMARY KEY CHECK (length(chat_id) BETWEEN 1 AND 256),
  chain_start      bigint NOT NULL DEFAULT 0,
  verbatim_after   bigint NOT NULL DEFAULT 0 CHECK (verbatim_after >= 0),
  compactions      bigint NOT NULL DEFAULT 0 CHECK (compactions >= 0),
  last_reason      text   CHECK (last_reason IN ('window', 'threshold', 'overflow')),
  summary_failures bigint NOT NULL DEFAULT 0 CHECK (summary_failures >= 0),
  summary_skips    bigint NOT NULL DEFAULT 0 CHECK (summary_skips >= 0),
  summary_from     bigint NOT NULL DEFAULT 0,
  updated_at       text   NOT NULL DEFAULT autonous_now()
);

CREATE TABLE learned_limits (
  endpoint       text   NOT NULL,
  model          text   NOT NULL,
  budget_tokens  bigint NOT NULL CHECK (budget_tokens > 0),
  stated_limit   bigint,
  message        text,
  learned_at     text   NOT NULL DEFAULT autonous_now(),
  PRIMARY KEY (endpoint, model)
);
