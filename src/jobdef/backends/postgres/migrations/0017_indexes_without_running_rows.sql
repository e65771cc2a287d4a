-- The index of args (0006) and the unique index of receipts (0010) no longer hold
-- running rows. A claim writes a new version of its job's row (it changes state, an
-- indexed column, so the row cannot be updated in place), and that version had an
-- entry of its own in every index whose predicate it met: the primary key,
-- jobdef_jobs_running, the args GIN index and the receipts. Now only the first two:
-- a claim writes 2 index entries where it wrote 4 (and as many fewer as its args
-- have keys, in the GIN index). A job is running for the span of its attempt, and
-- the fleet runs few at once: job_by_receipt and jobs_by_args find the running ones
-- through jobdef_jobs_running (one entry per running job, each checked) and the
-- others through these indexes.
--
-- Receipts stay unique among the rows that are not running, which is where an
-- enqueue writes them; a token is 136 random bits drawn by its enqueuer, so drawing
-- a running row's token again is as unlikely as guessing one.
--
-- CREATE INDEX (not CONCURRENTLY: a migration runs in one transaction) blocks
-- writes to the jobs table while it builds (it reads the whole table). On a large
-- table, build them beforehand without blocking, under the same names, and this
-- migration keeps them:
--   CREATE INDEX CONCURRENTLY jobdef_jobs_args_not_running ON <schema>.jobdef_jobs
--       USING gin (args jsonb_path_ops) WHERE state <> 'running';
--   CREATE UNIQUE INDEX CONCURRENTLY jobdef_jobs_receipt_not_running
--       ON <schema>.jobdef_jobs (receipt) WHERE receipt IS NOT NULL AND state <> 'running';
-- A concurrent build that failed leaves an invalid index, which the planner never
-- uses: it is dropped here and built again. The drops of the old indexes below lock
-- the table for a moment (DROP INDEX CONCURRENTLY them first to avoid even that, once
-- every process runs a version whose queries read the new ones: docs/upgrading.md).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index
               WHERE indexrelid = to_regclass('{schema}.jobdef_jobs_args_not_running')
                 AND NOT indisvalid) THEN
        DROP INDEX {schema}.jobdef_jobs_args_not_running;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_index
               WHERE indexrelid = to_regclass('{schema}.jobdef_jobs_receipt_not_running')
                 AND NOT indisvalid) THEN
        DROP INDEX {schema}.jobdef_jobs_receipt_not_running;
    END IF;
END
$$;
CREATE INDEX IF NOT EXISTS jobdef_jobs_args_not_running ON {schema}.jobdef_jobs
    USING gin (args jsonb_path_ops) WHERE state <> 'running';
CREATE UNIQUE INDEX IF NOT EXISTS jobdef_jobs_receipt_not_running ON {schema}.jobdef_jobs (receipt)
    WHERE receipt IS NOT NULL AND state <> 'running';
DROP INDEX IF EXISTS {schema}.jobdef_jobs_args;
DROP INDEX IF EXISTS {schema}.jobdef_jobs_receipt;
