CREATE TABLE accounts (
    id                    TEXT PRIMARY KEY NOT NULL,
    email                 TEXT NOT NULL UNIQUE,
    api_key               TEXT NOT NULL,
    queue_token           TEXT NOT NULL UNIQUE,
    queue_read_only_token TEXT NOT NULL UNIQUE,
    current_signing_key   TEXT NOT NULL,
    next_signing_key      TEXT NOT NULL,
    created_at            INTEGER NOT NULL,
    is_bootstrap          INTEGER NOT NULL DEFAULT 0
);
-- At most one bootstrap account.
CREATE UNIQUE INDEX accounts_one_bootstrap ON accounts (is_bootstrap) WHERE is_bootstrap = 1;

CREATE TABLE indexes (
    id              TEXT PRIMARY KEY NOT NULL,
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    kind            TEXT NOT NULL,
    name            TEXT NOT NULL,
    endpoint        TEXT NOT NULL UNIQUE,
    plan            TEXT NOT NULL,
    token           TEXT NOT NULL UNIQUE,
    read_only_token TEXT NOT NULL UNIQUE,
    created_at      INTEGER NOT NULL,
    -- Kind-specific settings: tagged, versioned JSON (quiver_admin::IndexSettings).
    settings        TEXT NOT NULL
);
CREATE INDEX indexes_by_owner ON indexes (account_id, kind, created_at);
