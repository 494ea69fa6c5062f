-- Attachments stored once per project (content-addressed by SHA-256) and referenced by each
-- recipient's message; retention of bodies, attachments, idempotency keys and finished jobs.
CREATE TABLE blobs (
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    -- lower-case hex SHA-256 of content
    sha256 TEXT NOT NULL,
    size BIGINT NOT NULL,
    content BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    -- the newest accept that referenced it: a blob in use now is never purged
    last_used_at BIGINT NOT NULL,
    PRIMARY KEY (project_id, sha256)
);

-- One row per attachment of a message: what keeps a blob alive.
CREATE TABLE message_attachments (
    message_id UUID NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    project_id UUID NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (message_id, position)
);
CREATE INDEX message_attachments_blob ON message_attachments(project_id, sha256);

-- Set when the retention task removed the message's body and attachments.
ALTER TABLE messages ADD COLUMN body_purged_at BIGINT;
CREATE INDEX messages_unpurged ON messages(created_at) WHERE body_purged_at IS NULL;

CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);
-- Only finished jobs are indexed, so the queue's hot path pays nothing for it.
CREATE INDEX jobs_finished ON jobs(updated_at) WHERE state IN ('done', 'failed', 'dead');
