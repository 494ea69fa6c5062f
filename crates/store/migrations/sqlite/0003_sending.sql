-- Templates, messages (one row per recipient; the send job lives in `jobs`), their status
-- history, and idempotency keys of /v1/send.
CREATE TABLE templates (
    id BLOB PRIMARY KEY,
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    type TEXT NOT NULL,
    from_email TEXT,
    from_name TEXT,
    reply_to TEXT,
    -- lower-cased domain of from_email: what domain deletion checks
    from_domain TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX templates_project ON templates(project_id, id);
CREATE INDEX templates_from_domain ON templates(project_id, from_domain);

CREATE TABLE messages (
    id BLOB PRIMARY KEY,
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    contact_id BLOB REFERENCES contacts(id) ON DELETE SET NULL,
    template_id BLOB,
    campaign_id BLOB,
    source TEXT NOT NULL,
    status TEXT NOT NULL,
    from_email TEXT NOT NULL,
    from_name TEXT,
    reply_to TEXT,
    to_email TEXT NOT NULL,
    to_name TEXT,
    subject TEXT NOT NULL,
    html TEXT NOT NULL,
    headers TEXT NOT NULL DEFAULT '{}',
    attachments TEXT NOT NULL DEFAULT '[]',
    message_id_header TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    sent_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX messages_project ON messages(project_id, id);
CREATE INDEX messages_contact ON messages(contact_id, id);

CREATE TABLE message_history (
    id BLOB PRIMARY KEY,
    message_id BLOB NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    detail TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX message_history_message ON message_history(message_id, id);

CREATE TABLE idempotency_keys (
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, key)
);
