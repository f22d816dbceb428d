-- An attempt's log lines in fewer rows. Besides its own event (`state`, `time`, `detail` at `seq`), a
-- row may stand for two more events of its message, with the default detail:
-- - ACTIVE at `seq - 1`, at `active_at` (an attempt's start, written with its outcome);
-- - CREATED at `created_seq`, at `created_at` (the row then carries the spec, as CREATED rows do).
-- So a message delivered at its first try is one row, where it was three. Listing reads these events
-- through the primary key (ACTIVE, whose place follows the row's) and `events_created` (CREATED).
-- Listing by state walks the log newest first until a page is found, which reads the whole log for a
-- state it rarely holds. Rows of their own in CREATED or ACTIVE are now rare (a cancelled message's
-- CREATED, say), and so are failures, retries and cancels in a healthy queue: `events_unusual` lists
-- every row but the DELIVERED ones, which are most of the log, so a delivery adds nothing to it; each
-- state's rows in log order.
ALTER TABLE events ADD COLUMN active_at INTEGER;
ALTER TABLE events ADD COLUMN created_seq INTEGER;
ALTER TABLE events ADD COLUMN created_at INTEGER;
CREATE INDEX events_created ON events (account_id, created_seq) WHERE created_seq IS NOT NULL;
CREATE INDEX events_unusual ON events (account_id, state, seq) WHERE state <> 'DELIVERED';
