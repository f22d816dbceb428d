-- The rest of the queue: messages and their delivery across nodes, dead letters, the events log,
-- deduplication, FIFO queues, workflow runs and flow-control keys.

-- Pending messages. `due_at` is when a message may next be claimed: its delivery time, or the end of the
-- lease of a claim in progress (`leased`, taken by node `lease_node`, see `PgDatabase`'s presence). `seq`
-- orders a FIFO queue's messages. A delivered message's row is deleted; the table's fillfactor leaves room
-- on each page for the claim's and the retry's updates.
CREATE TABLE messages (
    account_id      TEXT NOT NULL,
    id              TEXT NOT NULL,
    seq             BIGINT GENERATED ALWAYS AS IDENTITY,
    due_at          BIGINT NOT NULL,
    leased          BOOLEAN NOT NULL DEFAULT FALSE,
    lease_node      INTEGER,
    retried         BIGINT NOT NULL DEFAULT 0,
    not_before      BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    queue_name      TEXT,
    flow_key        TEXT,
    workflow_run_id TEXT,
    spec            TEXT NOT NULL,
    body            BYTEA NOT NULL,
    PRIMARY KEY (account_id, id)
) WITH (fillfactor = 80);
CREATE INDEX messages_due ON messages (due_at);
CREATE INDEX messages_by_queue ON messages (account_id, queue_name, seq) WHERE queue_name IS NOT NULL;
CREATE INDEX messages_by_flow_key ON messages (account_id, flow_key) WHERE flow_key IS NOT NULL;
-- The keyed claim reads due keyed messages oldest first: without this, it would walk every due message.
CREATE INDEX messages_keyed_due ON messages (due_at, seq) WHERE flow_key IS NOT NULL;
CREATE INDEX messages_by_run ON messages (account_id, workflow_run_id) WHERE workflow_run_id IS NOT NULL;
-- The leases in flight, for finding those of nodes that are gone.
CREATE INDEX messages_leased ON messages (lease_node) WHERE leased;
-- Every message row is written a few times and deleted within seconds: vacuum it after 2 % of its rows
-- changed (the default waits for 20 %), so dead rows never pile up in the claim's index scans.
ALTER TABLE messages SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);

CREATE TABLE deduplication (
    account_id TEXT NOT NULL,
    key        TEXT NOT NULL,
    message_id TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX deduplication_expiry ON deduplication (expires_at);
ALTER TABLE deduplication SET (autovacuum_vacuum_scale_factor = 0.02);

-- `spec` is the message's spec JSON; `failure_callback` how its failure callback went, as JSON.
CREATE TABLE dead_letters (
    seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dlq_id           TEXT NOT NULL UNIQUE,
    account_id       TEXT NOT NULL,
    message_id       TEXT NOT NULL,
    url              TEXT NOT NULL,
    topic_name       TEXT,
    queue_name       TEXT,
    schedule_id      TEXT,
    labels           TEXT NOT NULL,
    response_status  INTEGER,
    failed_at        BIGINT NOT NULL,
    retried          BIGINT NOT NULL,
    not_before       BIGINT NOT NULL,
    created_at       BIGINT NOT NULL,
    spec             TEXT NOT NULL,
    body             BYTEA NOT NULL,
    response_headers TEXT NOT NULL,
    response_body    BYTEA NOT NULL,
    failure_callback TEXT
);
CREATE INDEX dead_letters_by_account ON dead_letters (account_id, seq);

-- Every state change of every message. `seq` orders the log (one sequence for all accounts; a log is read
-- per account). Only CREATED events carry the spec; later events of the message borrow it. `host` and
-- `path` are the URL's, for the log's filters.
CREATE TABLE events (
    account_id  TEXT NOT NULL,
    seq         BIGINT GENERATED ALWAYS AS IDENTITY,
    message_id  TEXT NOT NULL,
    time        BIGINT NOT NULL,
    state       TEXT NOT NULL,
    url         TEXT NOT NULL,
    host        TEXT,
    path        TEXT,
    topic_name  TEXT,
    queue_name  TEXT,
    schedule_id TEXT,
    labels      TEXT NOT NULL,
    spec        TEXT,
    detail      TEXT NOT NULL,
    PRIMARY KEY (account_id, seq)
);
CREATE INDEX events_by_message ON events (account_id, message_id);

-- FIFO queues. A message with a queue may be claimed only while fewer than `parallelism` older messages
-- of its queue remain, and never while the queue is paused.
CREATE TABLE fifo_queues (
    account_id  TEXT NOT NULL,
    name        TEXT NOT NULL,
    parallelism BIGINT NOT NULL,
    paused      BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (account_id, name)
);

-- Workflow runs; `spec` is quiver_queue::workflow::WorkflowRun JSON (with its steps).
CREATE TABLE workflow_runs (
    account_id TEXT NOT NULL,
    id         TEXT NOT NULL,
    url        TEXT NOT NULL,
    state      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    spec       TEXT NOT NULL,
    PRIMARY KEY (account_id, id)
);
CREATE INDEX workflow_runs_by_time ON workflow_runs (account_id, created_at);

-- Flow control: messages published with the same key (per account) share its limits: at most
-- `parallelism` leased at once and at most `rate` leases started per `period_secs`, counted in
-- `rate_count` since `rate_period_start` (ms). NULL limits are unlimited. A claim of a key's messages
-- locks its row, so nodes decide one after another.
CREATE TABLE flow_controls (
    account_id         TEXT NOT NULL,
    key                TEXT NOT NULL,
    parallelism        BIGINT,
    rate               BIGINT,
    period_secs        BIGINT NOT NULL DEFAULT 1,
    paused             BOOLEAN NOT NULL DEFAULT FALSE,
    pinned_parallelism BOOLEAN NOT NULL DEFAULT FALSE,
    pinned_rate        BOOLEAN NOT NULL DEFAULT FALSE,
    rate_period_start  BIGINT NOT NULL DEFAULT 0,
    rate_count         BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, key)
);
