-- A message whose first-try delivery ended before its publish was written (see `quiver_queue::early`)
-- keeps its CREATED event in the row of its attempt's last event (`created_at`, its time in ms) instead of
-- a row of its own, and that row carries the message's spec: such a message is one row, not two. Its
-- CREATED event's place in the log is the row's seq - 2 (ACTIVE's stays seq - 1), which no other row
-- takes: from here on the log's sequence steps by three. The listing finds these rows through
-- `events_carried_created`, so that a log with few of them is not read whole to find them.
ALTER TABLE events ADD COLUMN created_at BIGINT;
ALTER TABLE events ALTER COLUMN seq SET INCREMENT BY 3;
CREATE INDEX events_carried_created ON events (account_id, seq) WHERE created_at IS NOT NULL;
