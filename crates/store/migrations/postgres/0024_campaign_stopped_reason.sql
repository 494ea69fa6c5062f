-- A fan-out that stops on its own (issue 29) is not a cancel: the campaign stays SENDING until
-- what it queued is delivered, then ends SENT. Why it stopped (BILLING_LIMIT, AUDIENCE_ERROR,
-- FANOUT_ERROR); `fanout_error` keeps the detail. NULL: the audience was sent in full.
ALTER TABLE campaigns ADD COLUMN stopped_reason TEXT;
