-- Tollgate fleet store, schema version 2: a narrow table of what usage and
-- spend group and sum, one row per complete call, so that a month's spend
-- reads about 150 bytes a call instead of each line's full text.
-- docs/fleet.md explains it.

-- One row per complete call record (`kind = 'call'`, phase `complete` or
-- none) of `audit_records`, with the same place (`replica`, `file`,
-- `line_no`, `time`), written by the shipper in the transaction that ships
-- the line, so both commit together and a batch offered again skips both.
-- Values usage sums are stored already summable: missing numbers as 0,
-- `failed` (status ≥ 400 or a JSON-RPC error), `denied` (decision deny),
-- `exposed_name` only for a call through a virtual server (it decides a
-- price there), and `bucket`, the duration's histogram bucket
-- (`tollgate_meter::duration_bucket`). Partitioned by month like
-- `audit_records`, the partitions created together.
CREATE TABLE audit_usage (
    time           timestamptz NOT NULL,
    replica        text        NOT NULL,
    file           text        NOT NULL,
    line_no        bigint      NOT NULL,
    team           text,
    cost_center    text,
    subject        text,
    trace_id       text,
    route          text,
    virtual_server text,
    name           text,
    exposed_name   text,
    method         text,
    catalog        boolean     NOT NULL,
    failed         boolean     NOT NULL,
    denied         boolean     NOT NULL,
    tokens         bigint      NOT NULL,
    bytes_in       bigint      NOT NULL,
    bytes_out      bigint      NOT NULL,
    duration_us    bigint      NOT NULL,
    bucket         smallint    NOT NULL,
    -- The key of `audit_records`, `time` first: the same index serves a
    -- window of time, and rows arrive in about the order of time.
    PRIMARY KEY (time, replica, file, line_no)
) PARTITION BY RANGE (time);

-- A partition for every month `audit_records` has.
DO $$
DECLARE
    p record;
BEGIN
    FOR p IN
        SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'audit_records'::regclass AND c.relname LIKE 'audit\_records\_%'
    LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF audit_usage %s',
            replace(p.relname, 'audit_records_', 'audit_usage_'), p.bound);
    END LOOP;
END
$$;

-- Spend reads this table now, not the covering index of `audit_records`
-- that served it (one index fewer to write per shipped line).
DROP INDEX audit_records_team;

-- The calls shipped before this version. `e0` estimates floor(log2 d),
-- corrected by one either way to be exact.
INSERT INTO audit_usage
SELECT time, replica, file, line_no, team, cost_center, subject, trace_id, route, virtual_server, name,
    CASE WHEN virtual_server IS NOT NULL THEN (line::jsonb)->>'exposed_name' END,
    method, COALESCE(catalog, false), COALESCE(status, 0) >= 400 OR rpc_error IS NOT NULL,
    decision IS NOT DISTINCT FROM 'deny', COALESCE(tokens, 0), COALESCE(bytes_in, 0),
    COALESCE(bytes_out, 0), d,
    CASE WHEN d < 32 THEN d ELSE (l2 - 4) * 32 + ((d >> (l2 - 5)) & 31) END
FROM audit_records
CROSS JOIN LATERAL (SELECT GREATEST(COALESCE(duration_us, 0), 0) AS d) AS dd
CROSS JOIN LATERAL (SELECT floor(ln(GREATEST(d, 1)::float8) / ln(2::float8))::int AS e0) AS l
CROSS JOIN LATERAL (SELECT e0 - (d < (1::bigint << e0))::int + (d >= (1::bigint << (e0 + 1)))::int AS l2) AS m
WHERE kind = 'call' AND (phase IS NULL OR phase = 'complete');
