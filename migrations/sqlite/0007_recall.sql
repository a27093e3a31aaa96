-- 0007: structured context and recall (the recall issue).
--
-- Full-text search of a chat's earlier messages and of operator documents. The index holds each
-- row's *search terms* (words segmented by ICU, CJK two-character pieces, Snowball stems; see
-- internal/tokens/search_terms.h) as space-separated tokens in plain FTS5 tables with the built-in
-- unicode61 tokenizer, so any connection (the sqlite3 shell, a front end) can read them. Terms
-- need ICU, which plain SQL does not have: triggers put every written, changed or deleted row in
-- search_queue, and autonous indexes what is queued (a turn its chat's rows, `autonous migrate`
-- everything). A front end's plain INSERT INTO history therefore needs nothing new.
CREATE TABLE search_queue (
  source  TEXT    NOT NULL CHECK (source IN ('history', 'document')),
  row_id  INTEGER NOT NULL,
  chat_id TEXT,            -- the row's chat (NULL: a document for every chat)
  PRIMARY KEY (source, row_id)
) WITHOUT ROWID;
CREATE INDEX search_queue_by_chat ON search_queue(source, chat_id);

-- rowid = history.id; `chat` = one token naming the chat (internal/backend/sqlite/search_index.cpp).
CREATE VIRTUAL TABLE history_terms USING fts5(chat, terms, tokenize = "unicode61 remove_diacritics 0 categories 'L* N* Co M*'");
CREATE VIRTUAL TABLE history_terms_vocab USING fts5vocab(history_terms, 'row');

CREATE TRIGGER history_search_insert AFTER INSERT ON history BEGIN
  INSERT OR REPLACE INTO search_queue(source, row_id, chat_id) VALUES ('history', NEW.id, NEW.chat_id);
END;
CREATE TRIGGER history_search_update AFTER UPDATE OF text, chat_id ON history BEGIN
  INSERT OR REPLACE INTO search_queue(source, row_id, chat_id) VALUES ('history', NEW.id, NEW.chat_id);
END;
CREATE TRIGGER history_search_delete AFTER DELETE ON history BEGIN
  INSERT OR REPLACE INTO search_queue(source, row_id, chat_id) VALUES ('history', OLD.id, OLD.chat_id);
END;
-- How many indexed rows hold each term, over all chats (chat = '') and per chat (chat = the
-- chat's token), and how many rows each chat has (term = ''), kept with the index: a
-- question's document frequencies are one lookup each, whatever the table's size (fts5vocab
-- would walk the term's whole doclist), and a term is judged common within the asking chat.
CREATE TABLE search_term_rows (
  source TEXT    NOT NULL CHECK (source IN ('history', 'document')),
  chat   TEXT    NOT NULL,
  term   TEXT    NOT NULL,
  rows   INTEGER NOT NULL,
  PRIMARY KEY (source, chat, term)
) WITHOUT ROWID;

-- The history that already exists is indexed too.
INSERT INTO search_queue(source, row_id, chat_id) SELECT 'history', id, chat_id FROM history;

-- Documents an operator provides for retrieval-augmented answers: searched like the history,
-- offered as evidence. chat_id NULL: for every chat; otherwise for that chat only.
CREATE TABLE documents (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  chat_id    TEXT CHECK (chat_id IS NULL OR length(chat_id) BETWEEN 1 AND 256),
  title      TEXT NOT NULL DEFAULT '',
  text       TEXT NOT NULL,
  source     TEXT,           -- where it came from (a URL, a file name), shown with it
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE VIRTUAL TABLE document_terms USING fts5(chat, terms, tokenize = "unicode61 remove_diacritics 0 categories 'L* N* Co M*'");
CREATE VIRTUAL TABLE document_terms_vocab USING fts5vocab(document_terms, 'row');
CREATE TRIGGER documents_search_insert AFTER INSERT ON documents BEGIN
  INSERT OR REPLACE INTO search_queue(source, row_id, chat_id) VALUES ('document', NEW.id, NEW.chat_id);
END;
CREATE TRIGGER documents_search_update AFTER UPDATE OF title, text, chat_id ON documents BEGIN
  INSERT OR REPLACE INTO search_queue(source, row_id, chat_id) VALUES ('document', NEW.id, NEW.chat_id);
END;
CREATE TRIGGER documents_search_delete AFTER DELETE ON documents BEGIN
  INSERT OR REPLACE INTO search_queue(source, row_id, chat_id) VALUES ('document', OLD.id, OLD.chat_id);
END;

-- A chat's pinned facts: short texts that ride in every prompt of the chat right after the
-- system prompt (P1, cut only after the evidence and the history). `autonous chat pin` / `unpin`,
-- or plain SQL.
CREATE TABLE chat_pins (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  chat_id    TEXT NOT NULL CHECK (length(chat_id) BETWEEN 1 AND 256),
  text       TEXT NOT NULL CHECK (length(text) BETWEEN 1 AND 4000),
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX chat_pins_by_chat ON chat_pins(chat_id, id);

-- The delta builder: the stable blocks (system, pinned, summary, history) of each chat's last
-- answered prompt, by SHA-256, so a turn can say which blocks a provider's prompt cache can reuse.
-- Written with the answered turn; `through` (history): the newest message id in that prompt.
CREATE TABLE context_blocks (
  chat_id    TEXT    NOT NULL,
  name       TEXT    NOT NULL CHECK (name IN ('system', 'pinned', 'summary', 'history')),
  sha256     TEXT    NOT NULL,
  tokens     INTEGER NOT NULL DEFAULT 0,
  through    INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (chat_id, name)
) WITHOUT ROWID;
