-- The most frequent tracked event names (`GET /analytics/top-events`, the dashboard's
-- Engagement tab) are counted from this index alone: it holds only tracked events, in name
-- order, and covers the query, so the count reads the project's tracked events and never its
-- mail events (the same index as SQLite's 0037).
CREATE INDEX events_tracked_name ON events(project_id, name) WHERE tracked;
