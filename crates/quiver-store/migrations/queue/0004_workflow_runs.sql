-- Workflow runs; `spec` is quiver_queue::workflow::WorkflowRun JSON (with its steps).
CREATE TABLE workflow_runs (
    account_id TEXT NOT NULL,
    id         TEXT NOT NULL,
    url        TEXT NOT NULL,
    state      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    spec       TEXT NOT NULL,
    PRIMARY KEY (account_id, id)
);
CREATE INDEX workflow_runs_by_time ON workflow_runs (account_id, created_at);
