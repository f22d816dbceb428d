-- The ordered feed of each index's vector writes, which every node follows to keep its in-memory indexes
-- current. A write locks its index's head row, so writes to one index take positions one after another,
-- in commit order, without gaps. A feed entry names what changed (JSON: namespaces and ids), not the
-- vectors: a follower reads the records as they now stand. Old entries are pruned; a node that falls
-- further behind loads the index afresh.
CREATE TABLE vector_heads (
    index_id TEXT PRIMARY KEY,
    position BIGINT NOT NULL
);

CREATE TABLE vector_feed (
    index_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    changes  TEXT NOT NULL,
    PRIMARY KEY (index_id, position)
);
