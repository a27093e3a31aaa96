-- 0010: search_term_deltas, the write buffer of the search index's overall term counts on
-- PostgreSQL (migrations/postgres/0010): there, concurrent workers add their turns' counts here
-- (inserts only, no row two transactions both update) and one of them at a time folds the
-- buffer into search_term_rows (chat ''). SQLite, whose writers take turns anyway, updates
-- search_term_rows directly and leaves this table empty; it exists so both backends have the
-- same tables.
CREATE TABLE search_term_deltas (
  id     INTEGER PRIMARY KEY,
  source TEXT    NOT NULL CHECK (source IN ('history', 'document')),
  term   TEXT    NOT NULL,
  rows   INTEGER NOT NULL
);
CREATE INDEX search_term_deltas_by_term ON search_term_deltas(source, term);
