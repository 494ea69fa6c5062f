-- Billing (issue 13): monthly caps per category (NULL = unlimited; no row = no caps) and the
-- messages queued per calendar month (UTC) and category, counted in the transaction that
-- queues them.
CREATE TABLE billing_limits (
    project_id BLOB PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    transactional INTEGER,
    campaigns INTEGER,
    workflows INTEGER,
    inbound INTEGER,
    updated_at INTEGER NOT NULL
);

CREATE TABLE billing_usage (
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    period TEXT NOT NULL,
    category TEXT NOT NULL,
    count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, period, category)
);
