-- Namespaces exist once written to, and survive being emptied (reset).
CREATE TABLE vector_namespaces (
    index_id TEXT NOT NULL,
    name     TEXT NOT NULL,
    PRIMARY KEY (index_id, name)
);

-- `dense`: little-endian f32s. `sparse`: little-endian u32 indices, then as many f32 values.
CREATE TABLE vectors (
    index_id  TEXT NOT NULL,
    namespace TEXT NOT NULL,
    id        TEXT NOT NULL,
    sequence  INTEGER NOT NULL,
    dense     BLOB,
    sparse    BLOB,
    metadata  TEXT,
    data      TEXT,
    PRIMARY KEY (index_id, namespace, id)
);
