-- Each project's clicks per link, kept by triggers on `events`, so Analytics' Engagement tab
-- reads its top links from a few rows instead of grouping every `email.click` the project
-- kept (docs/analytics.md "Top links"). Counts every click, of a campaign's message or not;
-- a deleted event (retention, a contact's deletion, a reset) is taken back.
CREATE TABLE link_clicks (
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    clicks INTEGER NOT NULL,
    PRIMARY KEY (project_id, url)
) WITHOUT ROWID;

INSERT INTO link_clicks (project_id, url, clicks)
SELECT project_id, json_extract(data, '$.url'), count(*) FROM events
WHERE name = 'email.click' AND json_extract(data, '$.url') IS NOT NULL
GROUP BY project_id, json_extract(data, '$.url');

CREATE TRIGGER link_clicks_insert AFTER INSERT ON events
WHEN NEW.name = 'email.click' AND json_extract(NEW.data, '$.url') IS NOT NULL BEGIN
    INSERT INTO link_clicks (project_id, url, clicks)
    VALUES (NEW.project_id, json_extract(NEW.data, '$.url'), 1)
    ON CONFLICT (project_id, url) DO UPDATE SET clicks = clicks + 1;
END;

CREATE TRIGGER link_clicks_delete AFTER DELETE ON events
WHEN OLD.name = 'email.click' BEGIN
    UPDATE link_clicks SET clicks = clicks - 1
    WHERE project_id = OLD.project_id AND url = json_extract(OLD.data, '$.url');
END;
