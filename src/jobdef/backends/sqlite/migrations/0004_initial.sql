-- A SQLite store's first migration: the whole schema at version 4. This
-- engine's numbering starts here and follows PostgreSQL's from then on, so a
-- version names the same step on both engines (the workers table is 0005 on each).
-- Times are REAL seconds since the epoch; errors are JSON {"type", "message",
-- "traceback"}, as PostgreSQL's jsonb.

CREATE TABLE jobdef_schema_version (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at REAL NOT NULL
);

CREATE TABLE jobdef_jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job TEXT NOT NULL,
    queue TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    args TEXT NOT NULL,
    state TEXT NOT NULL
        CHECK (state IN ('queued', 'running', 'done', 'dead', 'resolved', 'cancelled')),
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
    slot REAL
);

-- Claim reads only these indexes: queued rows in claim order (the second per
-- queue, for claims under queue limits). Finished rows are not in them, so the
-- cost of a claim does not grow with the number of done/dead jobs.
CREATE INDEX jobdef_jobs_claim ON jobdef_jobs (priority DESC, run_after, id)
    WHERE state = 'queued';
CREATE INDEX jobdef_jobs_claim_queue ON jobdef_jobs (queue, priority DESC, run_after, id)
    WHERE state = 'queued';

-- Lease reclaim and per-queue running counts read only running rows.
CREATE INDEX jobdef_jobs_running ON jobdef_jobs (lease_until, queue) WHERE state = 'running';

-- Duplicate detection on enqueue.
CREATE INDEX jobdef_jobs_key ON jobdef_jobs (job, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Retention pruning: finished rows only, so claiming and running a job never touch it.
CREATE INDEX jobdef_jobs_finished ON jobdef_jobs (job, state, finished_at)
    WHERE state IN ('done', 'dead', 'resolved', 'cancelled');

-- Finished attempts, one row written when each ends.
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
CREATE INDEX jobdef_attempts_job ON jobdef_attempts (job_id, attempt);

-- Each cron slot of a scheduled job is enqueued at most once, ever: this table is
-- not pruned with the jobs it points at.
CREATE TABLE jobdef_slots (
    job TEXT NOT NULL,
    slot REAL NOT NULL,
    job_id INTEGER NOT NULL,
    PRIMARY KEY (job, slot)
) WITHOUT ROWID;

CREATE TABLE jobdef_outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL UNIQUE,
    channel TEXT NOT NULL,
    event TEXT NOT NULL,
    job TEXT NOT NULL,
    payload TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL,
    created_at REAL NOT NULL,
    delivered_at REAL,
    last_error TEXT,
    lease_until REAL
);
CREATE INDEX jobdef_outbox_due ON jobdef_outbox (next_at, id) WHERE delivered_at IS NULL;

-- Pause state and, for a rate-limited queue, its token bucket shared by every
-- worker of the store: tokens left as of tokens_at (NULL: never used, full).
CREATE TABLE jobdef_queues (
    queue TEXT PRIMARY KEY,
    paused INTEGER NOT NULL DEFAULT 0,
    tokens REAL,
    tokens_at REAL
);

CREATE TABLE jobdef_processed_keys (
    key TEXT PRIMARY KEY,
    job_id INTEGER,
    processed_at REAL NOT NULL
);
