-- Each project's number of contacts and of subscribed contacts, kept by triggers, so the
-- dashboard's home and contacts pages (and GET /contacts' total without a search) read two
-- numbers instead of counting a million rows.
CREATE TABLE contact_counts (
    project_id BLOB PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    total INTEGER NOT NULL,
    subscribed INTEGER NOT NULL
);

INSERT INTO contact_counts (project_id, total, subscribed)
SELECT project_id, count(*), coalesce(sum(subscribed), 0) FROM contacts GROUP BY project_id;

CREATE TRIGGER contact_counts_insert AFTER INSERT ON contacts BEGIN
    INSERT INTO contact_counts (project_id, total, subscribed)
    VALUES (NEW.project_id, 1, NEW.subscribed)
    ON CONFLICT (project_id) DO UPDATE SET
        total = total + 1,
        subscribed = subscribed + excluded.subscribed;
END;

CREATE TRIGGER contact_counts_delete AFTER DELETE ON contacts BEGIN
    UPDATE contact_counts SET total = total - 1, subscribed = subscribed - OLD.subscribed
    WHERE project_id = OLD.project_id;
END;

CREATE TRIGGER contact_counts_subscribed AFTER UPDATE OF subscribed ON contacts
WHEN NEW.subscribed <> OLD.subscribed BEGIN
    UPDATE contact_counts SET subscribed = subscribed + NEW.subscribed - OLD.subscribed
    WHERE project_id = NEW.project_id;
END;
