-- SQLite's trigram index of contact emails (its 0034) has no counterpart here: PostgreSQL
-- scans the project's contacts for a search, in parallel where it can. This keeps the
-- migration numbers of both engines the same.
SELECT 1;
