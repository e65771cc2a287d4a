-- The dashboard's args search (`args.reservation_id:42`) finds jobs by containment,
-- args @> '{"reservation_id": 42}', through this index instead of scanning rows.
-- jsonb_path_ops: one hash per path-and-value, smaller and quicker than the default
-- jsonb_ops for @>, which is the only operator the search uses.
--
-- CREATE INDEX (not CONCURRENTLY: a migration runs in one transaction) blocks
-- writes to the jobs table while it builds. On a large table, build it beforehand
-- without blocking, under the same name, and this migration keeps it:
--   CREATE INDEX CONCURRENTLY jobdef_jobs_args ON <schema>.jobdef_jobs
--       USING gin (args jsonb_path_ops);
-- A concurrent build that failed leaves an invalid index, which the planner never
-- uses: it is dropped here and built again.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index
               WHERE indexrelid = to_regclass('{schema}.jobdef_jobs_args') AND NOT indisvalid) THEN
        DROP INDEX {schema}.jobdef_jobs_args;
    END IF;
END
$$;
CREATE INDEX IF NOT EXISTS jobdef_jobs_args ON {schema}.jobdef_jobs USING gin (args jsonb_path_ops);
