-- Result retention: the sheet's `result.retention` clears a done job's stored result
-- once that time has passed since the job ended, while the row itself stays until
-- `retention.done` (expire_results). This index holds only the rows that have a
-- result, by job and end, so each batch of that service reads only rows whose
-- result it clears: the cost does not grow with the jobs that have none, and no
-- claim reads it (queued and running rows never have a result).
--
-- CREATE INDEX (not CONCURRENTLY: a migration runs in one transaction) blocks
-- writes to the jobs table while it builds. On a large table, build it beforehand
-- without blocking, under the same name, and this migration keeps it:
--   CREATE INDEX CONCURRENTLY jobdef_jobs_results ON <schema>.jobdef_jobs
--       (job, finished_at) WHERE result IS NOT NULL;
-- A concurrent build that failed leaves an invalid index, which the planner never
-- uses: it is dropped here and built again.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index
               WHERE indexrelid = to_regclass('{schema}.jobdef_jobs_results')
                 AND NOT indisvalid) THEN
        DROP INDEX {schema}.jobdef_jobs_results;
    END IF;
END
$$;
CREATE INDEX IF NOT EXISTS jobdef_jobs_results ON {schema}.jobdef_jobs (job, finished_at)
    WHERE result IS NOT NULL;
