-- Periodic work runs once per cluster per period (DECISIONS.md "Several nodes on one
-- PostgreSQL"): one row per task, moved forward by the node that claims the task's next
-- period (a compare-and-set on period_start), and naming it for /metrics. SQLite is one node
-- and keeps these claims in memory (crates/store/src/periodic.rs).
CREATE TABLE periodic_tasks (
    task TEXT PRIMARY KEY,
    period_start BIGINT NOT NULL,
    node TEXT NOT NULL,
    claimed_at BIGINT NOT NULL,
    claims BIGINT NOT NULL
);
