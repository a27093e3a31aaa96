-- 0013: which of a chat's history messages the prompt carries cut (#28). `cut_through` is the
-- newest history id the chat's last compaction kept: an oversized message (over 1/16 of the
-- budget) up to it is carried cut; a newer one whole until the next compaction moves the mark.
-- What is cut then depends on nothing that changes between compactions, so the prompt only grows
-- at its end (cutting from the soft threshold on cut messages already sent, a second prefix break
-- each cycle). 0 (a chat that never compacted, and every row before this migration): nothing is
-- cut until the chat's next compaction.
ALTER TABLE context_state ADD COLUMN cut_through INTEGER NOT NULL DEFAULT 0 CHECK (cut_through >= 0);
