-- Foundation: accounts, projects, keys, contacts, custom-field types, contact events, jobs.
-- Ids are UUID v7 stored as 16-byte BLOBs; times are epoch milliseconds.
CREATE TABLE users (
    id BLOB PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE projects (
    id BLOB PRIMARY KEY,
    name TEXT NOT NULL,
    public_key TEXT NOT NULL UNIQUE,
    secret_key_hash TEXT NOT NULL UNIQUE,
    secret_key_prefix TEXT NOT NULL,
    tracking TEXT NOT NULL DEFAULT 'ENABLED',
    language TEXT NOT NULL DEFAULT 'en',
    disabled INTEGER NOT NULL DEFAULT 0,
    disabled_reason TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE project_members (
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    user_id BLOB NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_user ON project_members(user_id);

CREATE TABLE contacts (
    id BLOB PRIMARY KEY,
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    subscribed INTEGER NOT NULL,
    data TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CONSTRAINT contacts_project_email_key UNIQUE (project_id, email)
);
CREATE INDEX contacts_project_id ON contacts(project_id, id);

CREATE TABLE contact_fields (
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    type TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, key)
);

CREATE TABLE events (
    id BLOB PRIMARY KEY,
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    contact_id BLOB REFERENCES contacts(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    data TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL
);
CREATE INDEX events_contact ON events(contact_id, id);
CREATE INDEX events_project_name ON events(project_id, name, id);

-- The durable job queue: claimed with a lease, retried with backoff, dead after max_attempts.
CREATE TABLE jobs (
    id BLOB PRIMARY KEY,
    project_id BLOB REFERENCES projects(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL DEFAULT '{}',
    state TEXT NOT NULL DEFAULT 'waiting',
    run_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 10,
    lease_until INTEGER,
    last_error TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX jobs_due ON jobs(kind, state, run_at);
