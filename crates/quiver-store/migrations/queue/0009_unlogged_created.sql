-- A message's CREATED event is no longer written when it is published: until the message's first change
-- (claim, cancel, end), the message row itself stands for that event, and a positive `log_seq` holds the
-- place the event takes in its account's log. The change writes the event at that seq and turns the
-- column negative (a later claim sets it to NULL). So a publish writes no events row (the events table
-- and `events_by_message`, for the one partial index below) and stores its spec once. Rows from before
-- this step have a written CREATED event and keep `log_seq` NULL.
ALTER TABLE messages ADD COLUMN log_seq INTEGER;
-- Listing reads an account's unwritten CREATED events newest first, and a new seq is one past the largest
-- of the account's events and of these.
CREATE INDEX messages_unlogged ON messages (account_id, log_seq) WHERE log_seq > 0;
