-- The checks SQLite runs on every change of a job's state cost no lookup table.
--
-- SQLite evaluates `x IN (a, b, c)` with three or more values by building a small
-- table of the values, and inside a CHECK constraint or a partial index's WHERE it
-- builds that table again for every row it writes. A claim and a completion change
-- the state of each job they move, so each job paid for six such tables (about a
-- seventh of the SQL cost of a no-op job). The same tests written as comparisons
-- cost almost nothing:
--
-- - jobdef_jobs' state CHECK lists the same seven states as `=` tests joined by OR.
--   SQLite cannot change a CHECK in place but by writing its schema table, which
--   a SQLite in defensive mode refuses (macOS's own library, which Pythons built
--   against it use), so the table is rebuilt as 0012 did: copied in this
--   migration's transaction, its AUTOINCREMENT sequence carried over (an id once
--   handed out is never handed out again), and its indexes made again.
-- - jobdef_jobs_finished holds the rows that have ended, now chosen by
--   `finished_at IS NOT NULL`: every statement that ends a job (done, dead, resolved,
--   cancelled) sets finished_at, and the only one that takes a job back out of those
--   states (requeue) clears it, so it holds the same rows as before. Its columns are
--   the same, so prune reads it as before (`finished_at < :before` implies the
--   condition); the dead-letter reads say `finished_at IS NOT NULL`.
CREATE TABLE jobdef_jobs_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job TEXT NOT NULL,
    queue TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    args TEXT NOT NULL,
    state TEXT NOT NULL
        CHECK (state = 'waiting' OR state = 'queued' OR state = 'running'
               OR state = 'done' OR state = 'dead' OR state = 'resolved'
               OR state = 'cancelled'),
    -- Attempts started so far; the running attempt's number is the fencing token.
    attempt INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    idempotency_key TEXT,
    run_after REAL NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    -- When the newest attempt started: the running attempt has no attempts row yet.
    started_at REAL,
    finished_at REAL,
    worker_id TEXT,
    lease_until REAL,
    last_error TEXT,
    last_delay REAL,
    progress TEXT,
    note TEXT,
    slot REAL,
    trace_context TEXT,
    result TEXT,
    positional_args INTEGER,
    receipt TEXT,
    -- The flow this job is a step of, and the step's name in it (NULL: a plain job).
    flow_id INTEGER,
    step TEXT
);
INSERT INTO jobdef_jobs_new (
    id, job, queue, priority, args, state, attempt, max_attempts, idempotency_key,
    run_after, created_at, updated_at, started_at, finished_at, worker_id, lease_until,
    last_error, last_delay, progress, note, slot, trace_context, result, positional_args,
    receipt, flow_id, step
)
SELECT id, job, queue, priority, args, state, attempt, max_attempts, idempotency_key,
       run_after, created_at, updated_at, started_at, finished_at, worker_id, lease_until,
       last_error, last_delay, progress, note, slot, trace_context, result, positional_args,
       receipt, flow_id, step
FROM jobdef_jobs;
INSERT INTO sqlite_sequence (name, seq)
SELECT 'jobdef_jobs_new', seq FROM sqlite_sequence WHERE name = 'jobdef_jobs'
  AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'jobdef_jobs_new');
UPDATE sqlite_sequence
SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'jobdef_jobs'), 0))
WHERE name = 'jobdef_jobs_new';
DROP TABLE jobdef_jobs;
ALTER TABLE jobdef_jobs_new RENAME TO jobdef_jobs;
CREATE INDEX jobdef_jobs_claim ON jobdef_jobs (priority DESC, run_after, id)
    WHERE state = 'queued';
CREATE INDEX jobdef_jobs_claim_queue ON jobdef_jobs (queue, priority DESC, run_after, id)
    WHERE state = 'queued';
CREATE INDEX jobdef_jobs_key ON jobdef_jobs (job, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobdef_jobs_finished ON jobdef_jobs (job, state, finished_at)
    WHERE finished_at IS NOT NULL;
CREATE INDEX jobdef_jobs_running ON jobdef_jobs (lease_until, queue, started_at, state)
    WHERE state = 'running';
CREATE UNIQUE INDEX jobdef_jobs_receipt ON jobdef_jobs (receipt) WHERE receipt IS NOT NULL;
CREATE INDEX jobdef_jobs_results ON jobdef_jobs (job, finished_at) WHERE result IS NOT NULL;
-- A flow's steps, read whenever one of them ends.
CREATE INDEX jobdef_jobs_flow ON jobdef_jobs (flow_id, step) WHERE flow_id IS NOT NULL;
