-- Tollgate fleet store, schema version 3: `audit_usage.bucket` is the
-- bucket of the HDR histogram the meter keeps percentiles in (two
-- significant figures): the lowest duration the histogram counts with
-- this one. Below 256 µs that is the duration itself; above, the
-- duration with all but its eight leading bits cleared (128 buckets per
-- power of two). It was a bucket index of a histogram of 32 buckets per
-- power of two. docs/fleet.md explains the table.

-- floor(log2 d) is 64 minus the position of the leading one in d's bits.
ALTER TABLE audit_usage ALTER COLUMN bucket TYPE bigint USING (
    CASE WHEN duration_us < 256 THEN duration_us
    ELSE (duration_us >> (64 - position('1' IN duration_us::bit(64)::text) - 7))
        << (64 - position('1' IN duration_us::bit(64)::text) - 7)
    END
);
