-- PostgreSQL spreads a month's usage over shards (its 0038) so concurrent writers do not queue
-- on one row. SQLite has one writer: nothing to spread. This keeps the migration numbers of
-- both engines the same.
SELECT 1;
