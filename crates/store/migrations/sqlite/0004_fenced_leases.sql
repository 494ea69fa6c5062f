-- Fenced leases: every claim gives the job a fresh owner token; extending the lease, acking,
-- retrying and failing the job only apply while the token is still the job's.
ALTER TABLE jobs ADD COLUMN lease_token BLOB;
