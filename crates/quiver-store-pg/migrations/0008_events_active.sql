-- An attempt's ACTIVE event with the default detail is kept in the row of the event that follows it
-- (`active_at`, its time in ms) instead of a row of its own: a first-try delivery appends one row, not
-- two. Its place in the log is the row's seq - 1, which no other row takes: from here on the log's
-- sequence steps by two.
ALTER TABLE events ADD COLUMN active_at BIGINT;
ALTER TABLE events ALTER COLUMN seq SET INCREMENT BY 2;
