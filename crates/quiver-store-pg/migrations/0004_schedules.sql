-- Schedules; `next_fire` is NULL while paused. `spec` is quiver_queue::schedule::Schedule JSON.
CREATE TABLE schedules (
    account_id TEXT NOT NULL,
    id         TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    next_fire  BIGINT,
    spec       TEXT NOT NULL,
    PRIMARY KEY (account_id, id)
);
CREATE INDEX schedules_due ON schedules (next_fire) WHERE next_fire IS NOT NULL;
