-- A queue's concurrency cap comes from its Queue document in the sheets, which
-- every worker reads (ClaimOptions.queue_limits); this column was never written
-- and only echoed back as None, so it goes.
ALTER TABLE {schema}.jobdef_queues DROP COLUMN concurrency;
