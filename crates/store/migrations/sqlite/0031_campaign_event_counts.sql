-- A campaign's events kept as counts by triggers, so its report and GET /campaigns/:id/stats
-- read a few rows instead of every event of a million-recipient send (docs/campaigns.md
-- "Stats").
--
-- campaign_event_counts: per campaign, event name and hour of `created_at` (ms / 3,600,000):
--   events   the event rows (the report's opens and clicks over time);
--   messages the messages that reached the name for the first time, counted at the hour of
--            that first event (the stats: distinct messages per name; an event without a
--            message counts alone). Only its sum over the hours means something: a delete
--            takes it back at the hour of the last event of the name.
-- campaign_link_clicks: per campaign and `data.url`, the `email.click` events.
-- SQLite has one writer, so a row trigger sees every earlier event: the counts are exact.
CREATE TABLE campaign_event_counts (
    campaign_id BLOB NOT NULL,
    name TEXT NOT NULL,
    hour INTEGER NOT NULL,
    project_id BLOB NOT NULL,
    events INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    PRIMARY KEY (campaign_id, name, hour)
) WITHOUT ROWID;

CREATE TABLE campaign_link_clicks (
    campaign_id BLOB NOT NULL,
    url TEXT NOT NULL,
    project_id BLOB NOT NULL,
    clicks INTEGER NOT NULL,
    PRIMARY KEY (campaign_id, url)
) WITHOUT ROWID;

INSERT INTO campaign_event_counts (campaign_id, name, hour, project_id, events, messages)
SELECT campaign_id, name, created_at / 3600000, project_id, count(*), 0 FROM events
WHERE campaign_id IS NOT NULL GROUP BY campaign_id, name, created_at / 3600000;

INSERT INTO campaign_event_counts (campaign_id, name, hour, project_id, events, messages)
SELECT campaign_id, name, min(created_at) / 3600000, project_id, 0,
       count(DISTINCT coalesce(message_id, id))
FROM events WHERE campaign_id IS NOT NULL GROUP BY campaign_id, name, project_id
ON CONFLICT (campaign_id, name, hour) DO UPDATE SET messages = messages + excluded.messages;

INSERT INTO campaign_link_clicks (campaign_id, url, project_id, clicks)
SELECT campaign_id, json_extract(data, '$.url'), project_id, count(*) FROM events
WHERE campaign_id IS NOT NULL AND name = 'email.click' AND json_extract(data, '$.url') IS NOT NULL
GROUP BY campaign_id, json_extract(data, '$.url'), project_id;

CREATE TRIGGER campaign_event_counts_insert AFTER INSERT ON events
WHEN NEW.campaign_id IS NOT NULL BEGIN
    INSERT INTO campaign_event_counts (campaign_id, name, hour, project_id, events, messages)
    VALUES (NEW.campaign_id, NEW.name, NEW.created_at / 3600000, NEW.project_id, 1,
        NEW.message_id IS NULL OR NOT EXISTS (SELECT 1 FROM events e
            WHERE e.message_id = NEW.message_id AND e.name = NEW.name AND e.id <> NEW.id))
    ON CONFLICT (campaign_id, name, hour) DO UPDATE SET
        events = events + 1, messages = messages + excluded.messages;
END;

CREATE TRIGGER campaign_event_counts_delete AFTER DELETE ON events
WHEN OLD.campaign_id IS NOT NULL BEGIN
    UPDATE campaign_event_counts SET events = events - 1,
        messages = messages - (OLD.message_id IS NULL OR NOT EXISTS (SELECT 1 FROM events e
            WHERE e.message_id = OLD.message_id AND e.name = OLD.name))
    WHERE campaign_id = OLD.campaign_id AND name = OLD.name AND hour = OLD.created_at / 3600000;
END;

CREATE TRIGGER campaign_link_clicks_insert AFTER INSERT ON events
WHEN NEW.campaign_id IS NOT NULL AND NEW.name = 'email.click'
    AND json_extract(NEW.data, '$.url') IS NOT NULL BEGIN
    INSERT INTO campaign_link_clicks (campaign_id, url, project_id, clicks)
    VALUES (NEW.campaign_id, json_extract(NEW.data, '$.url'), NEW.project_id, 1)
    ON CONFLICT (campaign_id, url) DO UPDATE SET clicks = clicks + 1;
END;

CREATE TRIGGER campaign_link_clicks_delete AFTER DELETE ON events
WHEN OLD.campaign_id IS NOT NULL AND OLD.name = 'email.click' BEGIN
    UPDATE campaign_link_clicks SET clicks = clicks - 1
    WHERE campaign_id = OLD.campaign_id AND url = json_extract(OLD.data, '$.url');
END;

CREATE TRIGGER campaign_counts_gone AFTER DELETE ON campaigns BEGIN
    DELETE FROM campaign_event_counts WHERE campaign_id = OLD.id;
    DELETE FROM campaign_link_clicks WHERE campaign_id = OLD.id;
END;
