-- PostgreSQL's 0039 makes its count helpers PL/pgSQL (a SQL helper is planned again on every
-- call). SQLite's triggers are already inline. This keeps the migration numbers of both
-- engines the same.
SELECT 1;
