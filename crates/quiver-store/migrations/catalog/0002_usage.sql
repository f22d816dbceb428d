-- Usage per index per UTC minute (minutes since the epoch); `usage` is quiver_admin::usage::MinuteUsage JSON.
CREATE TABLE usage_minutes (
    index_id TEXT NOT NULL,
    minute   INTEGER NOT NULL,
    usage    TEXT NOT NULL,
    PRIMARY KEY (index_id, minute)
);
