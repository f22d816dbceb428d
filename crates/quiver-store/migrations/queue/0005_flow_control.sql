-- Flow control. Messages published with the same key (per account) share its limits: at most
-- `parallelism` of them leased at once and at most `rate` leases started per `period_secs`, counted in
-- `rate_count` since `rate_period_start` (ms). NULL limits are unlimited. Pinned limits ignore publishes.
CREATE TABLE flow_controls (
    account_id         TEXT NOT NULL,
    key                TEXT NOT NULL,
    parallelism        INTEGER,
    rate               INTEGER,
    period_secs        INTEGER NOT NULL DEFAULT 1,
    paused             INTEGER NOT NULL DEFAULT 0,
    pinned_parallelism INTEGER NOT NULL DEFAULT 0,
    pinned_rate        INTEGER NOT NULL DEFAULT 0,
    rate_period_start  INTEGER NOT NULL DEFAULT 0,
    rate_count         INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, key)
);
ALTER TABLE messages ADD COLUMN flow_key TEXT;
CREATE INDEX messages_by_flow_key ON messages (account_id, flow_key) WHERE flow_key IS NOT NULL;
