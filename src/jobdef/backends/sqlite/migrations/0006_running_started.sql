-- The running-rows index covers the reads that count or list running jobs, so they
-- read the index alone: the claim's per-queue running counts (concurrency-limited
-- queues), the dashboard's running counts, and each rate-limited queue's starts in
-- the current window (started_at; the starts that already ended are attempt rows).
-- SQLite does not count a partial index's WHERE column as held by the index, so
-- state is in it too. Same name and leading columns: lease reclaim reads it as
-- before, and a job enters and leaves it as often. PostgreSQL's 0006 is the args
-- index, which SQLite has no counterpart for (its args search is a bounded scan).
DROP INDEX jobdef_jobs_running;
CREATE INDEX jobdef_jobs_running ON jobdef_jobs (lease_until, queue, started_at, state)
    WHERE state = 'running';
