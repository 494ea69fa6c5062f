-- A month's usage per project and category is spread over shards (the writing connection's
-- process id modulo 16), as the contact and campaign counts are: every acceptance batch counts
-- its messages at its end, and with one row per project the batches written at once (four
-- writers per node, and other nodes) queued behind its lock until each other's commit. The
-- usage is the sum of the shards. A capped project's cap check still locks one row, shard 0,
-- until the commit (`crates/store/src/billing.rs`), so its checks stay one after another.
ALTER TABLE billing_usage ADD COLUMN shard INTEGER NOT NULL DEFAULT 0;
ALTER TABLE billing_usage DROP CONSTRAINT billing_usage_pkey;
ALTER TABLE billing_usage ADD PRIMARY KEY (project_id, period, category, shard);
