-- The jobs table, the attempts history, the outbox, queue controls, processed keys.
-- Times are REAL seconds since the epoch.

CREATE TABLE jobs (
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
    finished_at REAL,
    worker_id TEXT,
    lease_until REAL,
    last_error_type TEXT,
    last_error_message TEXT,
    last_error_traceback TEXT,
    last_delay REAL,
    progress TEXT,
    note TEXT,
    slot REAL
);

-- Claim reads only this index: queued rows in claim order. Finished rows are not
-- in it, so the cost of a claim does not grow with the number of done/dead jobs.
CREATE INDEX jobs_claim ON jobs (priority DESC, run_after, id) WHERE state = 'queued';

-- Lease reclaim and per-queue running counts read only running rows.
CREATE INDEX jobs_running ON jobs (lease_until, queue) WHERE state = 'running';

-- Duplicate detection on enqueue.
CREATE INDEX jobs_key ON jobs (job, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- Retention pruning: finished rows only, so claiming and running a job never touch it.
CREATE INDEX jobs_finished ON jobs (job, state, finished_at)
    WHERE state IN ('done', 'dead', 'resolved', 'cancelled');

CREATE TABLE attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    worker_id TEXT NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL,
    outcome TEXT,
    error_type TEXT,
    error_message TEXT,
    error_traceback TEXT
);

CREATE INDEX attempts_job ON attempts (job_id, attempt);

-- Each cron slot of a scheduled job is enqueued at most once, ever: this table is
-- not pruned with the jobs it points at.
CREATE TABLE job_slots (
    job TEXT NOT NULL,
    slot REAL NOT NULL,
    job_id INTEGER NOT NULL,
    PRIMARY KEY (job, slot)
) WITHOUT ROWID;

CREATE TABLE outbox (
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

CREATE INDEX outbox_due ON outbox (next_at, id) WHERE delivered_at IS NULL;

CREATE TABLE queue_state (
    queue TEXT PRIMARY KEY,
    paused INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE processed_keys (
    key TEXT PRIMARY KEY,
    job_id INTEGER,
    processed_at REAL NOT NULL
);
