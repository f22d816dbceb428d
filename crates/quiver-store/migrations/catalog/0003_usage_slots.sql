-- Usage per index rolled up per 12 minutes (`slot` is the first minute of the slot, a multiple of 12),
-- so statistics over days read a twelfth of the rows; every stats interval and calendar boundary is a
-- multiple of 12 minutes. Filled from usage_minutes when the store opens and this table is empty.
CREATE TABLE usage_slots (
    index_id TEXT NOT NULL,
    slot     INTEGER NOT NULL,
    usage    TEXT NOT NULL,
    PRIMARY KEY (index_id, slot)
);
