-- Segments (issue 10): dynamic segments keep their filter tree; static segments and tracked
-- dynamic segments keep membership rows. member_count is the cached count.
CREATE TABLE segments (
    id BLOB PRIMARY KEY,
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT,
    type TEXT NOT NULL,
    filters TEXT,
    track_membership INTEGER NOT NULL DEFAULT 0,
    member_count INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX segments_project ON segments(project_id, id);

CREATE TABLE segment_members (
    segment_id BLOB NOT NULL REFERENCES segments(id) ON DELETE CASCADE,
    contact_id BLOB NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (segment_id, contact_id)
);
CREATE INDEX segment_members_contact ON segment_members(contact_id);

-- event.<name> conditions: one range scan per leaf (contact ids of a name since a time).
CREATE INDEX events_project_name_time ON events(project_id, name, created_at, contact_id);
