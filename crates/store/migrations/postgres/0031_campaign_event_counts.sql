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
--
-- Row triggers, only for events of a campaign (the WHEN clause costs other events nothing).
-- Each row is spread over shards (the writing connection's process id modulo 16), so the
-- delivery workers of several nodes do not queue behind one counter row; a count is the sum
-- of its shards. An AFTER row trigger runs at the end of its statement and sees the
-- statement's other rows: of two events of one message and name written together, the one
-- with the smaller id (ids are UUIDv7, in time order) is the first. A delete after its
-- campaign is gone (a project's cascade) changes nothing: the campaign's rows went with it.
CREATE TABLE campaign_event_counts (
    campaign_id UUID NOT NULL,
    name TEXT NOT NULL,
    hour BIGINT NOT NULL,
    shard INTEGER NOT NULL,
    project_id UUID NOT NULL,
    events BIGINT NOT NULL,
    messages BIGINT NOT NULL,
    PRIMARY KEY (campaign_id, name, hour, shard)
);

CREATE TABLE campaign_link_clicks (
    campaign_id UUID NOT NULL,
    url TEXT NOT NULL,
    shard INTEGER NOT NULL,
    project_id UUID NOT NULL,
    clicks BIGINT NOT NULL,
    PRIMARY KEY (campaign_id, url, shard)
);

INSERT INTO campaign_event_counts (campaign_id, name, hour, shard, project_id, events, messages)
SELECT campaign_id, name, created_at / 3600000, 0, project_id, count(*), 0 FROM events
WHERE campaign_id IS NOT NULL GROUP BY campaign_id, name, created_at / 3600000, project_id;

INSERT INTO campaign_event_counts (campaign_id, name, hour, shard, project_id, events, messages)
SELECT campaign_id, name, min(created_at) / 3600000, 0, project_id, 0,
       count(DISTINCT coalesce(message_id, id))
FROM events WHERE campaign_id IS NOT NULL GROUP BY campaign_id, name, project_id
ON CONFLICT (campaign_id, name, hour, shard) DO UPDATE SET
    messages = campaign_event_counts.messages + excluded.messages;

INSERT INTO campaign_link_clicks (campaign_id, url, shard, project_id, clicks)
SELECT campaign_id, data->>'url', 0, project_id, count(*) FROM events
WHERE campaign_id IS NOT NULL AND name = 'email.click' AND data->>'url' IS NOT NULL
GROUP BY campaign_id, data->>'url', project_id;

CREATE FUNCTION campaign_event_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO campaign_event_counts (campaign_id, name, hour, shard, project_id, events, messages)
    VALUES (NEW.campaign_id, NEW.name, NEW.created_at / 3600000, pg_backend_pid() % 16,
        NEW.project_id, 1,
        CASE WHEN NEW.message_id IS NULL OR NOT EXISTS (SELECT 1 FROM events e
            WHERE e.message_id = NEW.message_id AND e.name = NEW.name AND e.id < NEW.id)
        THEN 1 ELSE 0 END)
    ON CONFLICT (campaign_id, name, hour, shard) DO UPDATE SET
        events = campaign_event_counts.events + 1,
        messages = campaign_event_counts.messages + excluded.messages;
    IF NEW.name = 'email.click' AND NEW.data->>'url' IS NOT NULL THEN
        INSERT INTO campaign_link_clicks (campaign_id, url, shard, project_id, clicks)
        VALUES (NEW.campaign_id, NEW.data->>'url', pg_backend_pid() % 16, NEW.project_id, 1)
        ON CONFLICT (campaign_id, url, shard) DO UPDATE SET
            clicks = campaign_link_clicks.clicks + 1;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION campaign_event_uncounted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM campaigns WHERE id = OLD.campaign_id) THEN
        RETURN NULL;
    END IF;
    INSERT INTO campaign_event_counts (campaign_id, name, hour, shard, project_id, events, messages)
    VALUES (OLD.campaign_id, OLD.name, OLD.created_at / 3600000, pg_backend_pid() % 16,
        OLD.project_id, -1,
        CASE WHEN OLD.message_id IS NULL OR NOT EXISTS (SELECT 1 FROM events e
            WHERE e.message_id = OLD.message_id AND e.name = OLD.name)
        THEN -1 ELSE 0 END)
    ON CONFLICT (campaign_id, name, hour, shard) DO UPDATE SET
        events = campaign_event_counts.events + excluded.events,
        messages = campaign_event_counts.messages + excluded.messages;
    IF OLD.name = 'email.click' AND OLD.data->>'url' IS NOT NULL THEN
        INSERT INTO campaign_link_clicks (campaign_id, url, shard, project_id, clicks)
        VALUES (OLD.campaign_id, OLD.data->>'url', pg_backend_pid() % 16, OLD.project_id, -1)
        ON CONFLICT (campaign_id, url, shard) DO UPDATE SET
            clicks = campaign_link_clicks.clicks - 1;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER campaign_event_counts_insert AFTER INSERT ON events
    FOR EACH ROW WHEN (NEW.campaign_id IS NOT NULL) EXECUTE FUNCTION campaign_event_counted();
CREATE TRIGGER campaign_event_counts_delete AFTER DELETE ON events
    FOR EACH ROW WHEN (OLD.campaign_id IS NOT NULL) EXECUTE FUNCTION campaign_event_uncounted();

CREATE FUNCTION campaign_counts_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM campaign_event_counts WHERE campaign_id = OLD.id;
    DELETE FROM campaign_link_clicks WHERE campaign_id = OLD.id;
    RETURN NULL;
END $$;

CREATE TRIGGER campaign_counts_gone AFTER DELETE ON campaigns
    FOR EACH ROW EXECUTE FUNCTION campaign_counts_gone();
