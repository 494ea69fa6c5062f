-- Tracked events (`POST /v1/track`) live in `events` beside the system events; `tracked`
-- tells them apart, so the Events resource lists, counts and deletes only tracked ones.
-- Their outbox rows are jobs of kind `event.dispatch` (docs/job-queue.md).
ALTER TABLE events ADD COLUMN tracked BOOLEAN NOT NULL DEFAULT FALSE;
-- Keyset pages of the tracked events of a project, newest first.
CREATE INDEX events_tracked ON events(project_id, id) WHERE tracked;
