-- 0013: which of a chat's history messages the prompt carries cut (#28). `cut_through` is the
-- newest history id the chat's last compaction kept: an oversized message (over 1/16 of the
-- budget) up to it is carried cut. A newer one is cut as it enters when that compaction was for
-- tokens (`last_reason` threshold or overflow), and carried whole until the next compaction when
-- it was for the message window. What is cut then changes only at a compaction, so the prompt
-- only grows at its end (cutting from the soft threshold on cut messages already sent, a second
-- prefix break each cycle). Rows from before this migration have 0: a chat whose last compaction
-- was for tokens cuts every oversized message from its next turn on, one for the window none
-- until its next compaction (each a one-time change of its prompt).
ALTER TABLE context_state ADD COLUMN cut_through INTEGER NOT NULL DEFAULT 0 CHECK (cut_through >= 0);
