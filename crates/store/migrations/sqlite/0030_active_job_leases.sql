-- The leases in flight, by kind and end: claim_jobs looks for expired leases on every claim
-- and the due-jobs probe for the next lease to end. Through jobs_due (kind, state, run_at)
-- both read every active job of the kind (hundreds while a node delivers); this index holds
-- only active jobs and answers both with a range.
CREATE INDEX jobs_active_leases ON jobs(kind, lease_until) WHERE state = 'active';
