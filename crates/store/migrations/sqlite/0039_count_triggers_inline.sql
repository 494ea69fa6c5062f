-- PostgreSQL's 0039 writes its count triggers' upserts inline (no SQL helper planned on every
-- call). SQLite's triggers are already inline. This keeps the migration numbers of both
-- engines the same.
SELECT 1;
