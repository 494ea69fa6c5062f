-- Feedback (bounces, complaints, deliveries) and the suppression list.
-- An address on a project's suppression list gets no mail of any type; subscribing its contact
-- again lifts it. One row per (project, address): the first reason wins until lifted.
CREATE TABLE suppressions (
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    -- bounce | complaint | manual (herald_core::feedback::SuppressionReason)
    reason TEXT NOT NULL,
    -- the message whose feedback put the address here (no foreign key: it may be purged)
    message_id BLOB,
    detail TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, email)
);

-- Messages of the mailbox simulator (never handed to a transport, never counted in rates).
ALTER TABLE messages ADD COLUMN simulated INTEGER NOT NULL DEFAULT 0;
-- The relay's own id for the message, from its 250 reply (e.g. Amazon SES `250 Ok <id>`):
-- what SES notifications name.
ALTER TABLE messages ADD COLUMN relay_message_id TEXT;
CREATE INDEX messages_relay_message_id ON messages(relay_message_id) WHERE relay_message_id IS NOT NULL;

-- Notifications already applied (SNS MessageId, or the generic format's signature), so a
-- replay changes nothing. Purged after a day by the retention task.
CREATE TABLE feedback_receipts (
    source TEXT NOT NULL,
    receipt_id TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (source, receipt_id)
);
CREATE INDEX feedback_receipts_received ON feedback_receipts(received_at);
