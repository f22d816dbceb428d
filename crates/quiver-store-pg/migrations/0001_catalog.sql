-- Accounts, the index catalogue and usage: the schema of quiver-store's catalog.db, in PostgreSQL types.
CREATE TABLE accounts (
    id                    TEXT PRIMARY KEY,
    email                 TEXT NOT NULL UNIQUE,
    api_key               TEXT NOT NULL,
    queue_token           TEXT NOT NULL UNIQUE,
    queue_read_only_token TEXT NOT NULL UNIQUE,
    current_signing_key   TEXT NOT NULL,
    next_signing_key      TEXT NOT NULL,
    created_at            BIGINT NOT NULL,
    is_bootstrap          BOOLEAN NOT NULL DEFAULT FALSE,
    -- Insertion order, for "oldest first" between accounts created in the same millisecond.
    seq                   BIGSERIAL NOT NULL
);
-- At most one bootstrap account.
CREATE UNIQUE INDEX accounts_one_bootstrap ON accounts (is_bootstrap) WHERE is_bootstrap;

CREATE TABLE indexes (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    kind            TEXT NOT NULL,
    name            TEXT NOT NULL,
    endpoint        TEXT NOT NULL UNIQUE,
    plan            TEXT NOT NULL,
    token           TEXT NOT NULL UNIQUE,
    read_only_token TEXT NOT NULL UNIQUE,
    created_at      BIGINT NOT NULL,
    -- Kind-specific settings: tagged, versioned JSON (quiver_admin::IndexSettings).
    settings        TEXT NOT NULL,
    seq             BIGSERIAL NOT NULL
);
CREATE INDEX indexes_by_owner ON indexes (account_id, kind, created_at, seq);

-- Usage per index per UTC minute, and rolled up per 12 minutes (`slot` is the slot's first minute);
-- `usage` is quiver_admin::usage::MinuteUsage JSON.
CREATE TABLE usage_minutes (
    index_id TEXT NOT NULL,
    minute   BIGINT NOT NULL,
    usage    TEXT NOT NULL,
    PRIMARY KEY (index_id, minute)
);
CREATE TABLE usage_slots (
    index_id TEXT NOT NULL,
    slot     BIGINT NOT NULL,
    usage    TEXT NOT NULL,
    PRIMARY KEY (index_id, slot)
);
