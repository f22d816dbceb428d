-- FIFO queues. A message with a queue may be claimed only while fewer than `parallelism` older messages
-- of its queue remain (delivering or waiting for a retry), and never while the queue is paused.
CREATE TABLE queues (
    account_id  TEXT NOT NULL,
    name        TEXT NOT NULL,
    parallelism INTEGER NOT NULL,
    paused      INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (account_id, name)
);
ALTER TABLE messages ADD COLUMN queue_name TEXT;
CREATE INDEX messages_by_queue ON messages (account_id, queue_name);
