-- A trigram index of contact emails, so a search for a rare substring reads its matches
-- instead of every contact of the project (docs/architecture.md "Contact search").
--
-- An FTS5 table over `contacts` (external content: it stores the index, not the emails), with
-- `detail=none`: enough to find the rows that hold every trigram of a term; the statement
-- checks the term itself on each row it finds.
--
-- The index is written behind the writes, not in them: `contacts_trigrams_mark.upto` is the
-- highest contact rowid indexed; a background task (`Store::index_contact_emails`) indexes
-- the contacts past it in batches. A search reads the index up to the mark and the contacts
-- past it directly, so it always sees every contact. The triggers keep indexed rows right:
-- a delete or an email change of a row at or below the mark is applied to the index at once,
-- and so is an insert that reuses a rowid at or below it (SQLite hands out max(rowid) + 1,
-- which can be a deleted row's).
CREATE VIRTUAL TABLE contacts_trigrams USING fts5(
    email, content = 'contacts', content_rowid = 'rowid', tokenize = 'trigram', detail = 'none'
);

CREATE TABLE contacts_trigrams_mark (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    upto INTEGER NOT NULL
);
INSERT INTO contacts_trigrams_mark (id, upto) VALUES (1, 0);

CREATE TRIGGER contacts_trigrams_insert AFTER INSERT ON contacts
WHEN NEW.rowid <= (SELECT upto FROM contacts_trigrams_mark) BEGIN
    INSERT INTO contacts_trigrams (rowid, email) VALUES (NEW.rowid, NEW.email);
END;

CREATE TRIGGER contacts_trigrams_delete AFTER DELETE ON contacts
WHEN OLD.rowid <= (SELECT upto FROM contacts_trigrams_mark) BEGIN
    INSERT INTO contacts_trigrams (contacts_trigrams, rowid, email)
    VALUES ('delete', OLD.rowid, OLD.email);
END;

CREATE TRIGGER contacts_trigrams_update AFTER UPDATE OF email ON contacts
WHEN OLD.email <> NEW.email AND OLD.rowid <= (SELECT upto FROM contacts_trigrams_mark) BEGIN
    INSERT INTO contacts_trigrams (contacts_trigrams, rowid, email)
    VALUES ('delete', OLD.rowid, OLD.email);
    INSERT INTO contacts_trigrams (rowid, email) VALUES (NEW.rowid, NEW.email);
END;
