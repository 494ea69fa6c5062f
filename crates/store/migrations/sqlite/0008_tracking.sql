-- Tracking and list pages. `template_type` is the kind of mail a message is (its template's
-- type; TRANSACTIONAL without a template): delivery reads it to decide tracking, the footer
-- and List-Unsubscribe. `opened_at` / `clicked_at` are set once, by the first open and the
-- first click, so each is recorded (event, status, history) exactly once, race-free.
ALTER TABLE messages ADD COLUMN template_type TEXT NOT NULL DEFAULT 'TRANSACTIONAL';
ALTER TABLE messages ADD COLUMN opened_at BIGINT;
ALTER TABLE messages ADD COLUMN clicked_at BIGINT;
