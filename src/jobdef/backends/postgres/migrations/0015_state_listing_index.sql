-- The jobs by state, which a listing of one state newest first reads (`jobdef jobs
-- --state dead`, list_jobs, a requeue of one state), no longer holds running or done
-- rows: running ones are few and found through jobdef_jobs_running, done ones are
-- most rows and the primary key's newest-first walk meets them at once. Every job
-- is running and then done, and each of those is a new version of its row (a claim
-- and a completion cannot update in place, they change indexed columns), which had
-- an entry of its own in this index: two index inserts per job, 8% of the WAL the
-- server writes per job of a claim-and-complete loop (bench/claim_loop.py).
--
-- CREATE INDEX (not CONCURRENTLY: a migration runs in one transaction) blocks
-- writes to the jobs table while it builds (it reads the whole table, and keeps
-- only the rows of the other states). On a large table, build it beforehand
-- without blocking, under the same name, and this migration keeps it:
--   CREATE INDEX CONCURRENTLY jobdef_jobs_state_listing ON <schema>.jobdef_jobs
--       (state, id) WHERE state NOT IN ('running', 'done');
-- A concurrent build that failed leaves an invalid index, which the planner never
-- uses: it is dropped here and built again. The drop of the old index below locks
-- the table for a moment (DROP INDEX CONCURRENTLY it first to avoid even that: no
-- query names it).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index
               WHERE indexrelid = to_regclass('{schema}.jobdef_jobs_state_listing')
                 AND NOT indisvalid) THEN
        DROP INDEX {schema}.jobdef_jobs_state_listing;
    END IF;
END
$$;
CREATE INDEX IF NOT EXISTS jobdef_jobs_state_listing ON {schema}.jobdef_jobs (state, id)
    WHERE state NOT IN ('running', 'done');
DROP INDEX IF EXISTS {schema}.jobdef_jobs_by_state;
