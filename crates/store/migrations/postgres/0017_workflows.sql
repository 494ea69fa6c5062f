-- Workflows (issue 11): the record, its steps (a TRIGGER step made with it) and transitions
-- (branch yes/no after a CONDITION, timeout after a WAIT_FOR_EVENT), and per-contact
-- executions with their step history.
CREATE TABLE workflows (
    id UUID PRIMARY KEY,
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT,
    trigger_type TEXT NOT NULL,
    trigger_config JSONB NOT NULL,
    enabled BOOLEAN NOT NULL DEFAULT FALSE,
    allow_reentry BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX workflows_project ON workflows(project_id, id);

CREATE TABLE workflow_steps (
    id UUID PRIMARY KEY,
    workflow_id UUID NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    name TEXT,
    config JSONB NOT NULL,
    position JSONB,
    -- SEND_EMAIL: the template it sends (template usage, delete 409)
    template_id UUID,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX workflow_steps_workflow ON workflow_steps(workflow_id);
CREATE INDEX workflow_steps_template ON workflow_steps(project_id, template_id) WHERE template_id IS NOT NULL;

CREATE TABLE workflow_transitions (
    id UUID PRIMARY KEY,
    workflow_id UUID NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    from_step_id UUID NOT NULL REFERENCES workflow_steps(id) ON DELETE CASCADE,
    to_step_id UUID NOT NULL REFERENCES workflow_steps(id) ON DELETE CASCADE,
    branch TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX workflow_transitions_workflow ON workflow_transitions(workflow_id);

CREATE TABLE workflow_executions (
    id UUID PRIMARY KEY,
    workflow_id UUID NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    project_id UUID NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    contact_id UUID REFERENCES contacts(id) ON DELETE SET NULL,
    status TEXT NOT NULL,
    current_step_id UUID,
    context JSONB NOT NULL,
    exit_reason TEXT,
    started_at BIGINT NOT NULL,
    completed_at BIGINT,
    updated_at BIGINT NOT NULL
);
CREATE INDEX workflow_executions_workflow ON workflow_executions(workflow_id, status, id);
CREATE INDEX workflow_executions_contact ON workflow_executions(contact_id);

CREATE TABLE workflow_execution_steps (
    id UUID PRIMARY KEY,
    execution_id UUID NOT NULL REFERENCES workflow_executions(id) ON DELETE CASCADE,
    step_id UUID,
    status TEXT NOT NULL,
    output JSONB,
    started_at BIGINT NOT NULL,
    completed_at BIGINT
);
CREATE INDEX workflow_execution_steps_execution ON workflow_execution_steps(execution_id, started_at);
