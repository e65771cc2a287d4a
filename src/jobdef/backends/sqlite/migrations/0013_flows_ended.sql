-- Flow pruning: a flow row is deleted once it has ended and none of its steps' rows
-- remain (each step is pruned by its own job's retention, so a flow outlives its
-- last step, never the reverse). This index holds only the ended flows, by id, so
-- prune walks them in batches from a cursor without reading the running ones; each
-- candidate's steps are looked up through jobdef_jobs_flow (flow_id, step).
CREATE INDEX jobdef_flows_ended ON jobdef_flows (id) WHERE state <> 'running';
