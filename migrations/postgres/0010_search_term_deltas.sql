-- 0010 (PostgreSQL): the write buffer of the search index's overall term counts. Every turn's
-- indexing changes the overall counts (chat '' in search_term_rows) of the terms it holds: as
-- updates, concurrent workers' completions queued on the same few rows, each holding them until
-- it committed (measured: 6 ms a statement, half the throughput of one process with 32 slots).
-- Workers insert their deltas here instead, and one of them at a time folds the buffer into
-- search_term_rows; readers add the pending deltas of the terms they look up (pg_search.cpp).
CREATE TABLE search_term_deltas (
  id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  source text   NOT NULL CHECK (source IN ('history', 'document')),
  term   text   NOT NULL,
  rows   bigint NOT NULL
);
CREATE INDEX search_term_deltas_by_term ON search_term_deltas(source, term);
