-- Contact jobs (CSV imports and bulk operations): the state a client polls by `jobId`. The
-- work itself runs from the durable queue (`jobs`, kinds `contacts.import` / `contacts.bulk`,
-- payload `{jobId}`), which deletes its row when done; this row stays with the result.
-- The input (the uploaded CSV, or the bulk ids as JSON) is in `contact_job_inputs` until the
-- job ends, so any node can run or resume it (a table of its own: a checkpoint rewrites the job
-- row, and SQLite rewrites a whole row, megabytes of input included, on every update).
-- `resume_offset` / `resume_line` / `result` are the checkpoint, written in the transaction of
-- each batch, so a resumed import continues after the last committed batch.
CREATE TABLE contact_jobs (
    id BLOB PRIMARY KEY,
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    operation TEXT NOT NULL,
    state TEXT NOT NULL,
    progress INTEGER NOT NULL DEFAULT 0,
    resume_offset INTEGER NOT NULL DEFAULT 0,
    resume_line INTEGER NOT NULL DEFAULT 0,
    result TEXT NOT NULL DEFAULT '{}',
    failed_reason TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX contact_jobs_project ON contact_jobs(project_id, id);

CREATE TABLE contact_job_inputs (
    id BLOB PRIMARY KEY REFERENCES contact_jobs(id) ON DELETE CASCADE,
    input BLOB NOT NULL
);

-- Analytics: time series count mail events per project and time without reading the table
-- (covering index); campaign breakdowns read only the campaign's rows.
CREATE INDEX events_project_created_name ON events(project_id, created_at, name);
CREATE INDEX events_project_campaign ON events(project_id, campaign_id, name) WHERE campaign_id IS NOT NULL;
CREATE INDEX messages_project_campaign ON messages(project_id, campaign_id) WHERE campaign_id IS NOT NULL;

-- The time-series rollup: counts of mail events per 15-minute slot, filled for closed slots
-- (older than a few minutes) up to a per-project watermark when a series is read, so a series
-- reads at most one row per slot and name instead of every event (docs/analytics.md).
CREATE TABLE analytics_slots (
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    slot INTEGER NOT NULL,
    name TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (project_id, slot, name)
);
CREATE TABLE analytics_watermarks (
    project_id BLOB PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    upto_slot INTEGER NOT NULL
);
