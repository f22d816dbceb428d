-- Fewer B-trees per message, since each one a commit touches costs at least a page in the WAL.
-- Messages are keyed by (account_id, id): one index now serves both lookups by id (always made with the
-- account) and an account's messages, instead of the id's unique index plus `messages_by_account`. Ids
-- sort by creation time, so an account's messages stay in creation order. Rows are copied in rowid
-- order, which the FIFO queue condition compares.
CREATE TABLE messages_keyed (
    id         TEXT NOT NULL,
    account_id TEXT NOT NULL,
    due_at     INTEGER NOT NULL,
    leased     INTEGER NOT NULL DEFAULT 0,
    retried    INTEGER NOT NULL DEFAULT 0,
    not_before INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    spec       TEXT NOT NULL,
    body       BLOB NOT NULL,
    queue_name TEXT,
    flow_key   TEXT,
    PRIMARY KEY (account_id, id)
);
INSERT INTO messages_keyed (id, account_id, due_at, leased, retried, not_before, created_at, spec, body,
        queue_name, flow_key)
    SELECT id, account_id, due_at, leased, retried, not_before, created_at, spec, body, queue_name, flow_key
    FROM messages ORDER BY rowid;
DROP TABLE messages;
ALTER TABLE messages_keyed RENAME TO messages;
CREATE INDEX messages_due ON messages (due_at);
CREATE INDEX messages_by_queue ON messages (account_id, queue_name) WHERE queue_name IS NOT NULL;
CREATE INDEX messages_by_flow_key ON messages (account_id, flow_key) WHERE flow_key IS NOT NULL;

-- Events are keyed by (account_id, seq), which is the order an account's log is read in, instead of a
-- rowid plus `events_by_account`. `seq` now counts per account (the log is only ever read per account).
CREATE TABLE events_keyed (
    account_id  TEXT NOT NULL,
    seq         INTEGER NOT NULL,
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
    detail      TEXT NOT NULL,
    PRIMARY KEY (account_id, seq)
) WITHOUT ROWID;
INSERT INTO events_keyed (account_id, seq, message_id, time, state, url, topic_name, queue_name, schedule_id,
        labels, spec, detail)
    SELECT account_id, seq, message_id, time, state, url, topic_name, queue_name, schedule_id, labels, spec,
        detail
    FROM events;
DROP TABLE events;
ALTER TABLE events_keyed RENAME TO events;
CREATE INDEX events_by_message ON events (account_id, message_id);
