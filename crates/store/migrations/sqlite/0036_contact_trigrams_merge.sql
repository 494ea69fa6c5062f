-- The trigram index of contact emails (0034) merges its segments in small steps the indexing
-- task takes after each batch (`Store::index_contact_emails`: `('merge', N)`), instead of
-- FTS5's automatic merges: those merged whole levels inside whichever insert crossed a
-- threshold, holding SQLite's one writer for 40-70 ms at times, which request writes
-- (`/v1/track`, `/v1/send`) waited behind. With small steps a batch holds it a few ms.
INSERT INTO contacts_trigrams (contacts_trigrams, rank) VALUES ('automerge', 0);
