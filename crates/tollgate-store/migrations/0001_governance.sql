-- Tollgate fleet store, schema version 1: audit lines shipped from every
-- replica's trail, where shipping stopped per file, catalog approvals, and
-- signed checkpoints of each replica's chain head. docs/fleet.md explains
-- each table.

-- Every line of every replica's audit files (genesis, call, gap, seal),
-- exactly as stored (`line`), so the chain can be verified from here too;
-- the columns searches and spend filter and sum by are copied out of call
-- records. Partitioned by month of `time` (UTC): a month's questions read
-- one partition, and old months are detached or dropped whole. Partitions
-- are created by the shipper before it writes into a month.
CREATE TABLE audit_records (
    replica      text        NOT NULL,
    file         text        NOT NULL,
    line_no      bigint      NOT NULL,
    time         timestamptz NOT NULL,
    seq          bigint      NOT NULL,
    kind         text        NOT NULL,
    hash         bytea       NOT NULL,
    line         text        NOT NULL,
    phase        text,
    request_id   text,
    trace_id     text,
    issuer       text,
    subject      text,
    team         text,
    cost_center  text,
    route        text,
    virtual_server text,
    method       text,
    name         text,
    decision     text,
    status       integer,
    rpc_error    bigint,
    error        text,
    bytes_in     bigint,
    bytes_out    bigint,
    tokens       bigint,
    catalog      boolean,
    duration_us  bigint,
    -- `time` is part of the key because a partitioned table's keys must
    -- hold its partition key; a line's time never changes, so (replica,
    -- file, line_no) is what identifies a line.
    PRIMARY KEY (replica, file, line_no, time)
) PARTITION BY RANGE (time);

-- One subject's calls in a window (the console's search, `audit query
-- --subject`), a team's spend (`usage --by team`), a server's and a tool's
-- calls, and one trace.
CREATE INDEX audit_records_time ON audit_records (time);
CREATE INDEX audit_records_subject ON audit_records (subject, time) WHERE subject IS NOT NULL;
CREATE INDEX audit_records_team ON audit_records (team, time)
    INCLUDE (tokens, bytes_in, bytes_out, duration_us) WHERE team IS NOT NULL;
CREATE INDEX audit_records_route ON audit_records (route, time) WHERE route IS NOT NULL;
CREATE INDEX audit_records_name ON audit_records (name, time) WHERE name IS NOT NULL;
CREATE INDEX audit_records_trace ON audit_records (trace_id) WHERE trace_id IS NOT NULL;

-- How far each replica's files are shipped: the byte offset of the next
-- line and the lines shipped, written in the transaction that inserts the
-- lines, so a batch and its position commit together.
CREATE TABLE audit_shipping (
    replica     text        NOT NULL,
    file        text        NOT NULL,
    shipped_bytes bigint    NOT NULL,
    shipped_lines bigint    NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (replica, file)
);

-- Catalog approvals as rows (the same fields as a catalog.lock
-- [[approval]]): append-only, the newest row per (server, kind, name) is
-- in force.
CREATE TABLE catalog_approvals (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    server      text        NOT NULL,
    kind        text        NOT NULL,
    name        text        NOT NULL,
    revision    text        NOT NULL,
    approved_by text        NOT NULL,
    approved_at timestamptz NOT NULL,
    note        text,
    definition  text        NOT NULL
);
CREATE INDEX catalog_approvals_entry ON catalog_approvals (server, kind, name, id DESC);

-- Signed checkpoints: a replica's chain head (the hash of a line, where it
-- is) signed with the replica's key, so that a consistent rewrite of the
-- replica's files is caught.
CREATE TABLE audit_checkpoints (
    replica     text        NOT NULL,
    file        text        NOT NULL,
    line_no     bigint      NOT NULL,
    seq         bigint      NOT NULL,
    head        bytea       NOT NULL,
    signature   bytea       NOT NULL,
    key_id      text        NOT NULL,
    time        timestamptz NOT NULL,
    PRIMARY KEY (replica, file, line_no)
);
CREATE INDEX audit_checkpoints_latest ON audit_checkpoints (replica, time DESC);
