-- Templates, messages (one row per recipient; the send job lives in `jobs`), their status
-- history, and idempotency keys of /v1/send.
CREATE TABLE templates (
    id UUID PRIMARY KEY,
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    type TEXT NOT NULL,
    from_email TEXT,
    from_name TEXT,
    reply_to TEXT,
    -- lower-cased domain of from_email: what domain deletion checks
    from_domain TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX templates_project ON templates(project_id, id);
CREATE INDEX templates_from_domain ON templates(project_id, from_domain);

CREATE TABLE messages (
    id UUID PRIMARY KEY,
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    contact_id UUID REFERENCES contacts(id) ON DELETE SET NULL,
    template_id UUID,
    campaign_id UUID,
    source TEXT NOT NULL,
    status TEXT NOT NULL,
    from_email TEXT NOT NULL,
    from_name TEXT,
    reply_to TEXT,
    to_email TEXT NOT NULL,
    to_name TEXT,
    subject TEXT NOT NULL,
    html TEXT NOT NULL,
    headers JSONB NOT NULL DEFAULT '{}',
    attachments JSONB NOT NULL DEFAULT '[]',
    message_id_header TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    sent_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX messages_project ON messages(project_id, id);
CREATE INDEX messages_contact ON messages(contact_id, id);

CREATE TABLE message_history (
    id UUID PRIMARY KEY,
    message_id UUID NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    detail TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX message_history_message ON message_history(message_id, id);

CREATE TABLE idempotency_keys (
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (project_id, key)
);
