-- Segments (issue 10): dynamic segments keep their filter tree; static segments and tracked
-- dynamic segments keep membership rows. member_count is the cached count.
CREATE TABLE segments (
    id UUID PRIMARY KEY,
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT,
    type TEXT NOT NULL,
    filters JSONB,
    track_membership BOOLEAN NOT NULL DEFAULT FALSE,
    member_count BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX segments_project ON segments(project_id, id);

CREATE TABLE segment_members (
    segment_id UUID NOT NULL REFERENCES segments(id) ON DELETE CASCADE,
    contact_id UUID NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (segment_id, contact_id)
);
CREATE INDEX segment_members_contact ON segment_members(contact_id);

-- event.<name> conditions: one range scan per leaf (contact ids of a name since a time).
CREATE INDEX events_project_name_time ON events(project_id, name, created_at, contact_id);
