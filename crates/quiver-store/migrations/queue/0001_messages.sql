-- Pending messages. `due_at` is when the message may next be claimed: its delivery time, or the end of
-- the lease of a claim in progress (`leased` = 1).
CREATE TABLE messages (
    id         TEXT PRIMARY KEY NOT NULL,
    account_id TEXT NOT NULL,
    due_at     INTEGER NOT NULL,
    leased     INTEGER NOT NULL DEFAULT 0,
    retried    INTEGER NOT NULL DEFAULT 0,
    not_before INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    spec       TEXT NOT NULL,
    body       BLOB NOT NULL
);
CREATE INDEX messages_due ON messages (due_at);
CREATE INDEX messages_by_account ON messages (account_id, created_at);

CREATE TABLE dead_letters (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    dlq_id           TEXT NOT NULL UNIQUE,
    account_id       TEXT NOT NULL,
    message_id       TEXT NOT NULL,
    url              TEXT NOT NULL,
    topic_name       TEXT,
    queue_name       TEXT,
    schedule_id      TEXT,
    labels           TEXT NOT NULL,
    response_status  INTEGER,
    failed_at        INTEGER NOT NULL,
    retried          INTEGER NOT NULL,
    not_before       INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    spec             TEXT NOT NULL,
    body             BLOB NOT NULL,
    response_headers TEXT NOT NULL,
    response_body    BLOB NOT NULL
);
CREATE INDEX dead_letters_by_account ON dead_letters (account_id, seq);

-- `seq` orders the log and pages it; events are never deleted singly, so rowids only grow.
CREATE TABLE events (
    seq         INTEGER PRIMARY KEY,
    account_id  TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    time        INTEGER NOT NULL,
    state       TEXT NOT NULL,
    url         TEXT NOT NULL,
    topic_name  TEXT,
    queue_name  TEXT,
    schedule_id TEXT,
    labels      TEXT NOT NULL,
    -- The message spec, on CREATED events only; later events of the message borrow it.
    spec        TEXT,
    detail      TEXT NOT NULL
);
CREATE INDEX events_by_account ON events (account_id, seq);
CREATE INDEX events_by_message ON events (account_id, message_id);

CREATE TABLE url_groups (
    account_id      TEXT NOT NULL,
    name            TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    endpoints       TEXT NOT NULL,
    default_headers TEXT NOT NULL,
    PRIMARY KEY (account_id, name)
);

CREATE TABLE deduplication (
    account_id TEXT NOT NULL,
    key        TEXT NOT NULL,
    message_id TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX deduplication_expiry ON deduplication (expires_at);
