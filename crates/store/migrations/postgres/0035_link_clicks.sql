-- Each project's clicks per link, kept by triggers on `events`, so Analytics' Engagement tab
-- reads its top links from a few rows instead of grouping every `email.click` the project
-- kept (docs/analytics.md "Top links"). Counts every click, of a campaign's message or not;
-- a deleted event (retention, a contact's deletion, a reset) is taken back.
--
-- Row triggers only for clicks (the WHEN clause costs other events nothing). Each count is
-- spread over shards (the writing connection's process id modulo 16), so the tracking
-- endpoints of several nodes do not queue behind one row; a count is the sum of its shards.
-- A project being deleted (its row already gone in the cascade) is skipped.
CREATE TABLE link_clicks (
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    shard INTEGER NOT NULL,
    clicks BIGINT NOT NULL,
    PRIMARY KEY (project_id, url, shard)
);

INSERT INTO link_clicks (project_id, url, shard, clicks)
SELECT project_id, data->>'url', 0, count(*) FROM events
WHERE name = 'email.click' AND data->>'url' IS NOT NULL
GROUP BY project_id, data->>'url';

CREATE FUNCTION link_clicks_add(p UUID, u TEXT, n BIGINT) RETURNS void LANGUAGE sql AS $$
    INSERT INTO link_clicks (project_id, url, shard, clicks)
    SELECT p, u, pg_backend_pid() % 16, n
    WHERE u IS NOT NULL AND EXISTS (SELECT 1 FROM projects WHERE id = p)
    ON CONFLICT (project_id, url, shard) DO UPDATE SET
        clicks = link_clicks.clicks + excluded.clicks
$$;

CREATE FUNCTION link_clicked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM link_clicks_add(NEW.project_id, NEW.data->>'url', 1);
    RETURN NULL;
END $$;

CREATE FUNCTION link_click_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM link_clicks_add(OLD.project_id, OLD.data->>'url', -1);
    RETURN NULL;
END $$;

CREATE TRIGGER link_clicks_insert AFTER INSERT ON events
    FOR EACH ROW WHEN (NEW.name = 'email.click') EXECUTE FUNCTION link_clicked();
CREATE TRIGGER link_clicks_delete AFTER DELETE ON events
    FOR EACH ROW WHEN (OLD.name = 'email.click') EXECUTE FUNCTION link_click_removed();
