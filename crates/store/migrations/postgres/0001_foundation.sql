-- Foundation: accounts, projects, keys, contacts, custom-field types, contact events, jobs.
-- Ids are UUID v7; times are epoch milliseconds (BIGINT) as on SQLite.
CREATE TABLE users (
    id UUID PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE projects (
    id UUID PRIMARY KEY,
    name TEXT NOT NULL,
    public_key TEXT NOT NULL UNIQUE,
    secret_key_hash TEXT NOT NULL UNIQUE,
    secret_key_prefix TEXT NOT NULL,
    tracking TEXT NOT NULL DEFAULT 'ENABLED',
    language TEXT NOT NULL DEFAULT 'en',
    disabled BOOLEAN NOT NULL DEFAULT FALSE,
    disabled_reason TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE project_members (
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    user_id UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_user ON project_members(user_id);

CREATE TABLE contacts (
    id UUID PRIMARY KEY,
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    subscribed BOOLEAN NOT NULL,
    data JSONB NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    CONSTRAINT contacts_project_email_key UNIQUE (project_id, email)
);
CREATE INDEX contacts_project_id ON contacts(project_id, id);

CREATE TABLE contact_fields (
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    type TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (project_id, key)
);

CREATE TABLE events (
    id UUID PRIMARY KEY,
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    contact_id UUID REFERENCES contacts(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    data JSONB NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL
);
CREATE INDEX events_contact ON events(contact_id, id);
CREATE INDEX events_project_name ON events(project_id, name, id);

-- The durable job queue: claimed with a lease (FOR UPDATE SKIP LOCKED), retried with backoff.
CREATE TABLE jobs (
    id UUID PRIMARY KEY,
    project_id UUID REFERENCES projects(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    payload JSONB NOT NULL DEFAULT '{}',
    state TEXT NOT NULL DEFAULT 'waiting',
    run_at BIGINT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 10,
    lease_until BIGINT,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX jobs_due ON jobs(kind, state, run_at);
