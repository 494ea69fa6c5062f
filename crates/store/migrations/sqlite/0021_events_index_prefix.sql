-- `events_project_created (project_id, created_at)` is a prefix of
-- `events_project_created_name (project_id, created_at, name)`, which serves every query it
-- served; each event insert (every `/v1/track`, every delivery outcome) updated both.
DROP INDEX IF EXISTS events_project_created;
