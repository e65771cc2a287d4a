-- Workflows (jobdef.backends.flows): a flow row per started flow, and its steps as
-- jobs that name it (flow_id, step). A step whose parents have not all ended is
-- held in the state `waiting`, which no claim reads (the claim indexes hold only
-- queued rows) and no retention rule prunes (prune reads only ended rows).
--
-- SQLite cannot change a CHECK constraint in place, so the jobs table is rebuilt
-- with `waiting` allowed: copied in this migration's transaction, its AUTOINCREMENT
-- sequence carried over (an id once handed out is never handed out again), and its
-- indexes made again as they were.
CREATE TABLE jobdef_jobs_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job TEXT NOT NULL,
    queue TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    args TEXT NOT NULL,
    state TEXT NOT NULL
        CHECK (state IN ('waiting', 'queued', 'running', 'done', 'dead', 'resolved',
                         'cancelled')),
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
    receipt
)
SELECT id, job, queue, priority, args, state, attempt, max_attempts, idempotency_key,
       run_after, created_at, updated_at, started_at, finished_at, worker_id, lease_until,
       last_error, last_delay, progress, note, slot, trace_context, result, positional_args,
       receipt
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
    WHERE state IN ('done', 'dead', 'resolved', 'cancelled');
CREATE INDEX jobdef_jobs_running ON jobdef_jobs (lease_until, queue, started_at, state)
    WHERE state = 'running';
CREATE UNIQUE INDEX jobdef_jobs_receipt ON jobdef_jobs (receipt) WHERE receipt IS NOT NULL;
CREATE INDEX jobdef_jobs_results ON jobdef_jobs (job, finished_at) WHERE result IS NOT NULL;
-- A flow's steps, read whenever one of them ends.
CREATE INDEX jobdef_jobs_flow ON jobdef_jobs (flow_id, step) WHERE flow_id IS NOT NULL;

-- One row per started flow. `graph` is the flow as it was started (each step's job,
-- parents with their edge policies, args sources; notify): a sheet edited later does
-- not change a flow already running. `args` are the flow's own args. state: running,
-- then done (every step but `finally` done), failed, or cancelled; `note` says why.
CREATE TABLE jobdef_flows (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    receipt TEXT NOT NULL UNIQUE,
    idempotency_key TEXT,
    args TEXT NOT NULL,
    graph TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('running', 'done', 'failed', 'cancelled')),
    deadline REAL,
    created_at REAL NOT NULL,
    finished_at REAL,
    note TEXT
);
CREATE INDEX jobdef_flows_key ON jobdef_flows (name, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobdef_flows_running ON jobdef_flows (deadline, id) WHERE state = 'running';
