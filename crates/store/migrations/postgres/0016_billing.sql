-- Billing (issue 13): monthly caps per category (NULL = unlimited; no row = no caps) and the
-- messages queued per calendar month (UTC) and category, counted in the transaction that
-- queues them.
CREATE TABLE billing_limits (
    project_id UUID PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    transactional BIGINT,
    campaigns BIGINT,
    workflows BIGINT,
    inbound BIGINT,
    updated_at BIGINT NOT NULL
);

CREATE TABLE billing_usage (
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    period TEXT NOT NULL,
    category TEXT NOT NULL,
    count BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, period, category)
);
