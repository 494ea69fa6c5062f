-- Sender domains and the project activity feed.
-- A domain row is one project's claim on a domain name. Several projects may claim the same
-- name while it is pending; only one row per name may be verified (the partial unique index),
-- so the first project to verify a domain owns it. The DKIM private key is stored sealed
-- (AES-256-GCM under a key derived from the server secret), never in clear.
CREATE TABLE domains (
    id UUID PRIMARY KEY,
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    domain TEXT NOT NULL,
    selector TEXT NOT NULL,
    dkim_public_key TEXT NOT NULL,
    dkim_private_key BYTEA NOT NULL,
    verified BOOLEAN NOT NULL DEFAULT FALSE,
    verified_at BIGINT,
    last_checked_at BIGINT,
    next_check_at BIGINT NOT NULL,
    -- state of each record at the last check, e.g. {"dkim": {"state": "found"}, ...}
    last_check JSONB,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    CONSTRAINT domains_project_domain_key UNIQUE (project_id, domain)
);
CREATE UNIQUE INDEX domains_verified_domain ON domains(domain) WHERE verified;
CREATE INDEX domains_next_check ON domains(next_check_at);

CREATE TABLE activity (
    id UUID PRIMARY KEY,
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    data JSONB NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL
);
CREATE INDEX activity_project ON activity(project_id, id);
