-- Each project's number of contacts and of subscribed contacts, kept by statement triggers,
-- so the dashboard's home and contacts pages (and GET /contacts' total without a search) read
-- a few numbers instead of counting a million rows.
--
-- A project's count is spread over shards (the writing connection's process id modulo 64):
-- concurrent writers (the acceptance batches, imports) each add to a row of their own instead
-- of queuing behind one row lock until the other commits. The count is the sum of the shards.
CREATE TABLE contact_counts (
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    shard INTEGER NOT NULL,
    total BIGINT NOT NULL,
    subscribed BIGINT NOT NULL,
    PRIMARY KEY (project_id, shard)
);

INSERT INTO contact_counts (project_id, shard, total, subscribed)
SELECT project_id, 0, count(*), count(*) FILTER (WHERE subscribed) FROM contacts
GROUP BY project_id;

-- Adds a project's (total, subscribed) delta to the current connection's shard. A project
-- being deleted (its row already gone in the cascade) is skipped.
CREATE FUNCTION contact_counts_add(p UUID, t BIGINT, s BIGINT) RETURNS void LANGUAGE sql AS $$
    INSERT INTO contact_counts (project_id, shard, total, subscribed)
    SELECT p, pg_backend_pid() % 64, t, s
    WHERE EXISTS (SELECT 1 FROM projects WHERE id = p)
    ON CONFLICT (project_id, shard) DO UPDATE SET
        total = contact_counts.total + excluded.total,
        subscribed = contact_counts.subscribed + excluded.subscribed
$$;

CREATE FUNCTION contact_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM contact_counts_add(project_id, count(*), count(*) FILTER (WHERE subscribed))
    FROM new_rows GROUP BY project_id;
    RETURN NULL;
END $$;

CREATE FUNCTION contact_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM contact_counts_add(project_id, -count(*), -count(*) FILTER (WHERE subscribed))
    FROM old_rows GROUP BY project_id;
    RETURN NULL;
END $$;

-- Per row, and only when the subscription changed (the WHEN clause costs other updates
-- nothing; a statement trigger would copy every updated row into transition tables).
CREATE FUNCTION contact_counts_resubscribed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM contact_counts_add(NEW.project_id, 0, CASE WHEN NEW.subscribed THEN 1 ELSE -1 END);
    RETURN NULL;
END $$;

CREATE TRIGGER contact_counts_insert AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_counts_inserted();
CREATE TRIGGER contact_counts_delete AFTER DELETE ON contacts
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_counts_deleted();
CREATE TRIGGER contact_counts_update AFTER UPDATE OF subscribed ON contacts
    FOR EACH ROW WHEN (OLD.subscribed IS DISTINCT FROM NEW.subscribed)
    EXECUTE FUNCTION contact_counts_resubscribed();
