-- Vectors of every index: the schema of quiver-store's vectors.db, in PostgreSQL types. Namespaces exist
-- once written to, and survive being emptied (reset). `dense` and `sparse` hold the domain's stored bytes
-- (quiver_vector::record::bytes); the ANN lives in each node's memory, not here. `metadata` is the JSON
-- text as stored, so it reads back exactly.
CREATE TABLE vector_namespaces (
    index_id TEXT NOT NULL,
    name     TEXT NOT NULL,
    PRIMARY KEY (index_id, name)
);

CREATE TABLE vectors (
    index_id  TEXT NOT NULL,
    namespace TEXT NOT NULL,
    id        TEXT NOT NULL,
    sequence  BIGINT NOT NULL,
    dense     BYTEA,
    sparse    BYTEA,
    metadata  TEXT,
    data      TEXT,
    PRIMARY KEY (index_id, namespace, id)
);
CREATE INDEX vectors_in_load_order ON vectors (index_id, namespace, sequence);
