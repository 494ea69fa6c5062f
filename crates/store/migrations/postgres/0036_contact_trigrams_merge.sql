-- SQLite's merge setting of its trigram index (its 0036) has no counterpart here: PostgreSQL
-- has no such index. This keeps the migration numbers of both engines the same.
SELECT 1;
