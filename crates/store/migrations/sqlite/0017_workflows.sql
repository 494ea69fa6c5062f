-- Workflows (issue 11): the record, its steps (a TRIGGER step made with it) and transitions
-- (branch yes/no after a CONDITION, timeout after a WAIT_FOR_EVENT), and per-contact
-- executions with their step history.
CREATE TABLE workflows (
    id BLOB PRIMARY KEY,
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT,
    trigger_type TEXT NOT NULL,
    trigger_config TEXT NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 0,
    allow_reentry INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX workflows_project ON workflows(project_id, id);

CREATE TABLE workflow_steps (
    id BLOB PRIMARY KEY,
    workflow_id BLOB NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    name TEXT,
    config TEXT NOT NULL,
    position TEXT,
    -- SEND_EMAIL: the template it sends (template usage, delete 409)
    template_id BLOB,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX workflow_steps_workflow ON workflow_steps(workflow_id);
CREATE INDEX workflow_steps_template ON workflow_steps(project_id, template_id) WHERE template_id IS NOT NULL;

CREATE TABLE workflow_transitions (
    id BLOB PRIMARY KEY,
    workflow_id BLOB NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    from_step_id BLOB NOT NULL REFERENCES workflow_steps(id) ON DELETE CASCADE,
    to_step_id BLOB NOT NULL REFERENCES workflow_steps(id) ON DELETE CASCADE,
    branch TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX workflow_transitions_workflow ON workflow_transitions(workflow_id);

CREATE TABLE workflow_executions (
    id BLOB PRIMARY KEY,
    workflow_id BLOB NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    project_id BLOB NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    contact_id BLOB REFERENCES contacts(id) ON DELETE SET NULL,
    status TEXT NOT NULL,
    current_step_id BLOB,
    context TEXT NOT NULL,
    exit_reason TEXT,
    started_at INTEGER NOT NULL,
    completed_at INTEGER,
    updated_at INTEGER NOT NULL
);
CREATE INDEX workflow_executions_workflow ON workflow_executions(workflow_id, status, id);
CREATE INDEX workflow_executions_contact ON workflow_executions(contact_id);

CREATE TABLE workflow_execution_steps (
    id BLOB PRIMARY KEY,
    execution_id BLOB NOT NULL REFERENCES workflow_executions(id) ON DELETE CASCADE,
    step_id BLOB,
    status TEXT NOT NULL,
    output TEXT,
    started_at INTEGER NOT NULL,
    completed_at INTEGER
);
CREATE INDEX workflow_execution_steps_execution ON workflow_execution_steps(execution_id, started_at);
