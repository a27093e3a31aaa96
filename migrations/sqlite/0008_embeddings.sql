-- 0008: optional embeddings for recall (EMBEDDING_MODEL; off by default), and each search
-- source's overall row count in search_term_rows (chat '' and term ''), which 0007 did not
-- keep: without it, terms common to most documents were never recognised as common.
INSERT OR REPLACE INTO search_term_rows(source, chat, term, rows)
  SELECT 'history', '', '', count(*) FROM history_terms
  UNION ALL SELECT 'document', '', '', count(*) FROM document_terms;
-- Counts that reached 0 (a deleted chat's terms) are no longer kept.
DELETE FROM search_term_rows WHERE rows <= 0;

--
-- One vector per history row and embedding model: float32 values in native byte order
-- (little-endian on x86-64 and arm64), scaled to unit length, so a dot product is the cosine.
-- The worker embeds a chat's new rows (and rows edited since) in the same /v1/embeddings call
-- as the user's message, a turn at a time. An edit marks the row's vectors stale (they are not
-- searched until re-embedded); a delete removes them.
-- A rowid table (not WITHOUT ROWID): a vector of a few KiB stays on its row's page instead of
-- overflow pages, and rows written in id order lie in id order, so the scan reads pages in turn.
CREATE TABLE history_vectors (
  id      INTEGER NOT NULL,  -- history.id
  model   TEXT    NOT NULL,
  chat_id TEXT    NOT NULL,
  vector  BLOB    NOT NULL,
  stale   INTEGER NOT NULL DEFAULT 0 CHECK (stale IN (0, 1))
);
CREATE UNIQUE INDEX history_vectors_key ON history_vectors(id, model);
CREATE INDEX history_vectors_by_chat ON history_vectors(chat_id, model, id);
CREATE INDEX history_vectors_stale ON history_vectors(chat_id, model) WHERE stale = 1;

CREATE TRIGGER history_vectors_edited AFTER UPDATE OF text, chat_id ON history BEGIN
  UPDATE history_vectors SET stale = 1, chat_id = NEW.chat_id WHERE id = OLD.id;
END;
CREATE TRIGGER history_vectors_deleted AFTER DELETE ON history BEGIN
  DELETE FROM history_vectors WHERE id = OLD.id;
END;

-- P4 custom blocks (context/custom_blocks.h): an operator's context for one chat (chat_id) or
-- every chat (NULL), sent at the lowest priority after the evidence: whole, halved or left out
-- as room allows. Plain SQL is the interface.
CREATE TABLE custom_blocks (
  id         INTEGER PRIMARY KEY,
  chat_id    TEXT CONSTRAINT custom_blocks_chat_id_1_to_256_chars
                  CHECK (chat_id IS NULL OR length(chat_id) BETWEEN 1 AND 256),
  name       TEXT NOT NULL CONSTRAINT custom_blocks_name_1_to_100_chars
                  CHECK (length(name) BETWEEN 1 AND 100),
  text       TEXT NOT NULL CONSTRAINT custom_blocks_text_1_to_100000_chars
                  CHECK (length(text) BETWEEN 1 AND 100000),
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
-- One block of a name per chat (and for every chat): a front end upserts by (chat, name).
CREATE UNIQUE INDEX custom_blocks_by_name ON custom_blocks(coalesce(chat_id, ''), name);
CREATE INDEX custom_blocks_by_chat ON custom_blocks(chat_id, id);
