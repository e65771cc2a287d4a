-- Every table and index takes the jobdef_ prefix, as on PostgreSQL, so the job
-- store can live in the application's own database (next to its own `jobs`).
-- And the attempts table follows PostgreSQL's model: a row is written once, when
-- the attempt ends; the running attempt lives on the job row (worker_id, attempt,
-- started_at) until then. Errors are one JSON column {"type", "message",
-- "traceback"} in both tables, as PostgreSQL's jsonb.
--
-- The runner applies this file and its version bump in one transaction: a
-- failure leaves the store at version 3, its tables untouched.
--
-- Open attempt rows of the old model (written at claim, closed at the end):
-- the one of each running job's current attempt moves onto the job row
-- (started_at) and is not copied; any other open row (its job no longer runs
-- that attempt, e.g. a running job requeued by hand) is history and is kept
-- as it was.

CREATE TABLE jobdef_jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job TEXT NOT NULL,
    queue TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    args TEXT NOT NULL,
    state TEXT NOT NULL
        CHECK (state IN ('queued', 'running', 'done', 'dead', 'resolved', 'cancelled')),
    attempt INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    idempotency_key TEXT,
    run_after REAL NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    worker_id TEXT,
    lease_until REAL,
    last_error TEXT,
    last_delay REAL,
    progress TEXT,
    note TEXT,
    slot REAL
);

INSERT INTO jobdef_jobs (
    id, job, queue, priority, args, state, attempt, max_attempts, idempotency_key,
    run_after, created_at, updated_at, started_at, finished_at, worker_id, lease_until,
    last_error, last_delay, progress, note, slot
)
SELECT j.id, j.job, j.queue, j.priority, j.args, j.state, j.attempt, j.max_attempts,
       j.idempotency_key, j.run_after, j.created_at, j.updated_at,
       -- The start of a running job's open attempt, else of its newest attempt; a
       -- running job without any (edited by hand) started when it was last updated.
       coalesce(
           (SELECT max(a.started_at) FROM attempts AS a
            WHERE a.job_id = j.id AND j.state = 'running' AND a.finished_at IS NULL
              AND a.attempt = j.attempt AND a.worker_id = j.worker_id),
           (SELECT a.started_at FROM attempts AS a WHERE a.job_id = j.id
            ORDER BY a.id DESC LIMIT 1),
           CASE WHEN j.state = 'running' THEN j.updated_at END
       ),
       j.finished_at, j.worker_id, j.lease_until,
       CASE WHEN j.last_error_type IS NOT NULL THEN json_object(
           'type', j.last_error_type,
           'message', coalesce(j.last_error_message, ''),
           'traceback', coalesce(j.last_error_traceback, '')
       ) END,
       j.last_delay, j.progress, j.note, j.slot
FROM jobs AS j;

CREATE TABLE jobdef_attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    worker_id TEXT NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL,
    outcome TEXT,
    error TEXT
);

INSERT INTO jobdef_attempts (id, job_id, attempt, worker_id, started_at, finished_at, outcome, error)
SELECT a.id, a.job_id, a.attempt, a.worker_id, a.started_at, a.finished_at, a.outcome,
       CASE WHEN a.error_type IS NOT NULL THEN json_object(
           'type', a.error_type,
           'message', coalesce(a.error_message, ''),
           'traceback', coalesce(a.error_traceback, '')
       ) END
FROM attempts AS a
WHERE NOT (a.finished_at IS NULL AND EXISTS (
    SELECT 1 FROM jobs AS j
    WHERE j.id = a.job_id AND j.state = 'running'
      AND j.attempt = a.attempt AND j.worker_id = a.worker_id
));

-- Ids are never handed out twice: the new tables go on from the old sequences
-- (a pruned newest job leaves its sequence past max(id)).
DELETE FROM sqlite_sequence WHERE name IN ('jobdef_jobs', 'jobdef_attempts');
INSERT INTO sqlite_sequence (name, seq)
SELECT 'jobdef_' || name, seq FROM sqlite_sequence WHERE name IN ('jobs', 'attempts');

DROP TABLE jobs;
DROP TABLE attempts;

CREATE INDEX jobdef_jobs_claim ON jobdef_jobs (priority DESC, run_after, id)
    WHERE state = 'queued';
CREATE INDEX jobdef_jobs_claim_queue ON jobdef_jobs (queue, priority DESC, run_after, id)
    WHERE state = 'queued';
CREATE INDEX jobdef_jobs_running ON jobdef_jobs (lease_until, queue) WHERE state = 'running';
CREATE INDEX jobdef_jobs_key ON jobdef_jobs (job, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobdef_jobs_finished ON jobdef_jobs (job, state, finished_at)
    WHERE state IN ('done', 'dead', 'resolved', 'cancelled');
CREATE INDEX jobdef_attempts_job ON jobdef_attempts (job_id, attempt);

ALTER TABLE job_slots RENAME TO jobdef_slots;
ALTER TABLE queue_state RENAME TO jobdef_queues;
ALTER TABLE processed_keys RENAME TO jobdef_processed_keys;
ALTER TABLE outbox RENAME TO jobdef_outbox;
DROP INDEX outbox_due;
CREATE INDEX jobdef_outbox_due ON jobdef_outbox (next_at, id) WHERE delivered_at IS NULL;
ALTER TABLE schema_version RENAME TO jobdef_schema_version;
