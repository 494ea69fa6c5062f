-- Workflow executor (issue 11 part 2): when a WAITING execution wakes (the end of a DELAY, the
-- timeout of a WAIT_FOR_EVENT; NULL while it waits for an event without timeout), and at most
-- one RUNNING or WAITING execution per workflow and contact, so two nodes handling events of
-- one contact at once cannot start it twice.
ALTER TABLE workflow_executions ADD COLUMN wake_at INTEGER;
CREATE UNIQUE INDEX workflow_executions_active ON workflow_executions(workflow_id, contact_id)
    WHERE status IN ('RUNNING', 'WAITING');
CREATE INDEX workflow_executions_entered ON workflow_executions(workflow_id, contact_id, started_at);
