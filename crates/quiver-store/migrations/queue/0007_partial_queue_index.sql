-- Most messages belong to no queue: index only those that do, so a publish updates one index fewer.
-- Every query on `queue_name` compares it with `=`, which implies `queue_name IS NOT NULL`, so the
-- partial index serves them all.
DROP INDEX messages_by_queue;
CREATE INDEX messages_by_queue ON messages (account_id, queue_name) WHERE queue_name IS NOT NULL;
