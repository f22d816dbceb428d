-- The first nouns of the queue: URL groups, and workflow runs waiting for events. `endpoints` and
-- `default_headers` are JSON; a waiter's `spec` is its JSON wait request.
CREATE TABLE url_groups (
    account_id      TEXT NOT NULL,
    name            TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    endpoints       TEXT NOT NULL,
    default_headers TEXT NOT NULL,
    PRIMARY KEY (account_id, name)
);

CREATE TABLE waiters (
    seq        BIGSERIAL PRIMARY KEY,
    account_id TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    run_id     TEXT,
    deadline   BIGINT NOT NULL,
    spec       TEXT NOT NULL
);
CREATE INDEX waiters_by_event ON waiters (account_id, event_id);
CREATE INDEX waiters_by_deadline ON waiters (deadline);

-- Events notified for a run before it waited for them, kept for its later wait.
CREATE TABLE early_events (
    account_id TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    data       BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, run_id, event_id)
);
