-- The workers table (jobdef.backends.workers): each worker's row, written at its
-- start, its last_beat stamped every lease/3 while it lives, deleted when it stops.
-- A row whose last_beat is older than its lease is a worker that died or froze.
-- queues is a JSON list as text (NULL: every queue); times are epoch seconds on the
-- server's clock.
CREATE TABLE {schema}.jobdef_workers (
    id            text PRIMARY KEY,
    host          text NOT NULL,
    pid           bigint NOT NULL,
    queues        text,
    concurrency   integer NOT NULL,
    lease_seconds double precision NOT NULL,
    version       text NOT NULL,
    started_at    double precision NOT NULL,
    last_beat     double precision NOT NULL
);

-- The enqueuer's trace context (W3C traceparent and tracestate as a JSON object,
-- jobdef.telemetry.traces), the parent of each attempt's span; NULL without tracing.
-- A nullable column without a default: adding it rewrites no row.
ALTER TABLE {schema}.jobdef_jobs ADD COLUMN trace_context text;
