-- Workflow runs waiting for an event (`context.waitForEvent`). `spec` is the JSON wait request (where to
-- publish the result, with which headers, and the step); `deadline` (ms) is when it times out.
CREATE TABLE waiters (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    run_id     TEXT,
    deadline   INTEGER NOT NULL,
    spec       TEXT NOT NULL
);
CREATE INDEX waiters_by_event ON waiters (account_id, event_id);
CREATE INDEX waiters_by_deadline ON waiters (deadline);

-- Events notified for a run before it waited for them (notify with a run id), kept for its later wait.
CREATE TABLE early_events (
    account_id TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    data       BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, run_id, event_id)
);
