-- The workers table (jobdef.backends.workers): each worker's row, written at its
-- start, its last_beat stamped every lease/3 while it lives, deleted when it stops.
-- A row whose last_beat is older than its lease is a worker that died or froze.
-- queues is a JSON list (NULL: every queue); times are REAL epoch seconds.
CREATE TABLE jobdef_workers (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    queues TEXT,
    concurrency INTEGER NOT NULL,
    lease_seconds REAL NOT NULL,
    version TEXT NOT NULL,
    started_at REAL NOT NULL,
    last_beat REAL NOT NULL
);

-- The enqueuer's trace context (W3C traceparent and tracestate as a JSON object,
-- jobdef.telemetry.traces), the parent of each attempt's span; NULL without tracing.
ALTER TABLE jobdef_jobs ADD COLUMN trace_context TEXT;
