-- Work that one node runs per round, whichever node comes first (retention): `next_at` (ms) is when the
-- next round is due; the node whose update moves it runs the round.
CREATE TABLE rounds (
    name    TEXT PRIMARY KEY,
    next_at BIGINT NOT NULL
);
