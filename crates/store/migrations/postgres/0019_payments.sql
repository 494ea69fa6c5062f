-- Payments (issue 13, docs/accounts.md "Payments"): the payment provider's customer of a
-- project (created at its first checkout), its subscription and that subscription's status as
-- the provider's webhooks last reported it (`status_at`: the provider's time of that event, so
-- a late, older event never overwrites a newer state), and the ids of the webhook events
-- already applied, so a replayed event changes nothing twice.
CREATE TABLE payment_accounts (
    project_id UUID PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
    customer_id TEXT UNIQUE,
    subscription_id TEXT,
    status TEXT,
    status_at BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL
);

CREATE TABLE payment_events (
    event_id TEXT PRIMARY KEY,
    project_id UUID,
    received_at BIGINT NOT NULL
);
CREATE INDEX payment_events_received ON payment_events (received_at);
