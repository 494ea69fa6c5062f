-- Contact jobs (CSV imports and bulk operations): the state a client polls by `jobId`. The
-- work itself runs from the durable queue (`jobs`, kinds `contacts.import` / `contacts.bulk`,
-- payload `{jobId}`), which deletes its row when done; this row stays with the result.
-- `input` holds the uploaded CSV (or the bulk ids as JSON) until the job ends, so any node can
-- run or resume it; `resume_offset` / `resume_line` / `result` are the checkpoint, written in the
-- transaction of each batch, so a resumed import continues after the last committed batch.
CREATE TABLE contact_jobs (
    id UUID PRIMARY KEY,
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    operation TEXT NOT NULL,
    state TEXT NOT NULL,
    progress INTEGER NOT NULL DEFAULT 0,
    input BYTEA,
    resume_offset BIGINT NOT NULL DEFAULT 0,
    resume_line BIGINT NOT NULL DEFAULT 0,
    result JSONB NOT NULL DEFAULT '{}',
    failed_reason TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX contact_jobs_project ON contact_jobs(project_id, id);

-- Analytics: time series count mail events per project and time without reading the table
-- (covering index); campaign breakdowns read only the campaign's rows.
CREATE INDEX events_project_created_name ON events(project_id, created_at, name);
CREATE INDEX events_project_campaign ON events(project_id, campaign_id, name) WHERE campaign_id IS NOT NULL;
CREATE INDEX messages_project_campaign ON messages(project_id, campaign_id) WHERE campaign_id IS NOT NULL;
