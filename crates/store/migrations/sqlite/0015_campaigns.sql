-- Campaigns (issue 10). The audience is read when the fan-out runs, in keyset pages by contact
-- id; `fanout_after` is the checkpoint (the last contact id queued), committed with each
-- page's messages, so a resumed fan-out neither skips nor repeats a recipient.
-- `fanout_done` turns true with the last page; the campaign becomes SENT once no message of it
-- is still PENDING or SENDING.
CREATE TABLE campaigns (
    id BLOB PRIMARY KEY,
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    from_email TEXT NOT NULL,
    from_name TEXT,
    reply_to TEXT,
    -- lower-cased domain of from_email (what domain deletion checks, like templates)
    from_domain TEXT NOT NULL,
    audience_type TEXT NOT NULL,
    segment_id BLOB,
    audience_filter TEXT,
    status TEXT NOT NULL,
    scheduled_at INTEGER,
    started_at INTEGER,
    finished_at INTEGER,
    cancelled_at INTEGER,
    -- the queue job that fans the campaign out while it is SCHEDULED or SENDING
    fanout_job_id BLOB,
    fanout_after BLOB,
    -- why the fan-out gave up (the campaign then ends CANCELLED)
    fanout_error TEXT,
    fanout_done INTEGER NOT NULL DEFAULT 0,
    -- recipients the fan-out wrote a message for (queued or skipped)
    total_recipients INTEGER NOT NULL DEFAULT 0,
    -- of those, skipped: suppressed addresses, contacts unsubscribed meanwhile
    skipped_recipients INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX campaigns_project ON campaigns(project_id, created_at, id);
CREATE INDEX campaigns_active ON campaigns(status) WHERE status IN ('SCHEDULED', 'SENDING');

-- The SENT check asks whether a campaign still has an unsent message: one index probe.
DROP INDEX messages_project_campaign;
CREATE INDEX messages_project_campaign ON messages(project_id, campaign_id, status) WHERE campaign_id IS NOT NULL;
