-- Events link to the message (and later the campaign) that caused them, so the activity feed
-- shows `messageId` / `campaignId` without parsing `data`. No foreign keys: an event outlives
-- the purge of its message's body and stays readable after anything it names is gone.
ALTER TABLE events ADD COLUMN message_id UUID;
ALTER TABLE events ADD COLUMN campaign_id UUID;
-- The project feed: keyset pages by id (UUID v7, so newest first), optionally by name.
CREATE INDEX events_project_id ON events(project_id, id);
CREATE INDEX events_message ON events(message_id) WHERE message_id IS NOT NULL;
-- Windows of the feed's counts (`/activity/stats`, `/activity/recent-count`) by time.
CREATE INDEX events_project_created ON events(project_id, created_at);
