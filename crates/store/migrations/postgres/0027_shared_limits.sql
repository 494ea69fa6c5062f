-- Limits counted across the nodes of a cluster (DECISIONS.md "Several nodes on one
-- PostgreSQL", docs/deploy.md "Limits across nodes"). SQLite is one node and counts in
-- memory: neither table exists there.
--
-- rate_windows: requests per key ('p:<project>' or 'a:<client> <route>') in one fixed
-- one-minute window (window = epoch seconds / 60). Nodes take slices of `used` ahead and
-- count them down in memory; `used` may pass the limit (a refused slice), never what was
-- granted. Unlogged: the counters are worth nothing after a crash, and writing them skips
-- the WAL. Windows past are deleted by the retention task.
CREATE UNLOGGED TABLE rate_windows (
    key TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    used BIGINT NOT NULL,
    PRIMARY KEY (key, window_start)
);

-- send_throttle: a project's next free send slot, in epoch microseconds of the database's
-- clock. A node reserves a run of slots by moving it forward (HERALD_SEND_RATE_PER_SECOND
-- apart) and spaces its sends on them.
CREATE UNLOGGED TABLE send_throttle (
    project_id UUID PRIMARY KEY,
    next_slot BIGINT NOT NULL
);
