-- Flow pruning: a flow row is deleted once it has ended and none of its steps' rows
-- remain (each step is pruned by its own job's retention, so a flow outlives its
-- last step, never the reverse). This index holds only the ended flows, by id, so
-- prune walks them in batches from a cursor without reading the running ones; each
-- candidate's steps are looked up through jobdef_jobs_flow (flow_id, step).
--
-- CREATE INDEX (not CONCURRENTLY: a migration runs in one transaction) blocks
-- writes to the flows table while it builds. On a large table, build it beforehand
-- without blocking, under the same name, and this migration keeps it:
--   CREATE INDEX CONCURRENTLY jobdef_flows_ended ON <schema>.jobdef_flows (id)
--       WHERE state <> 'running';
-- A concurrent build that failed leaves an invalid index, which the planner never
-- uses: it is dropped here and built again.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index
               WHERE indexrelid = to_regclass('{schema}.jobdef_flows_ended')
                 AND NOT indisvalid) THEN
        DROP INDEX {schema}.jobdef_flows_ended;
    END IF;
END
$$;
CREATE INDEX IF NOT EXISTS jobdef_flows_ended ON {schema}.jobdef_flows (id)
    WHERE state <> 'running';
