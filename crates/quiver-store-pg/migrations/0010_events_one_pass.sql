-- The listing reads each row of `events` with the events it carries (its ACTIVE and CREATED events, see
-- migrations 8 and 9) in one pass of the primary key, newest first, so nothing looks up the rows that
-- carry a CREATED event by themselves any more: their index only cost each such row a second entry.
DROP INDEX events_carried_created;
-- A listing of states a healthy log seldom holds (failures, retries, cancels: `RARE_STATES` in the code)
-- reads each state's rows here, newest first, rather than looking for them among every delivery. A
-- delivered message adds nothing to it.
CREATE INDEX events_rare ON events (account_id, state, seq)
    WHERE state IN ('RETRY', 'ERROR', 'FAILED', 'CANCEL_REQUESTED', 'CANCELED');
