-- Receipts: the token an enqueue hands back with the job's id (jobdef.Receipt), which
-- a browser or another service may hold to ask about the job (Queue.status,
-- Queue.wait) where a sequential id would let it guess others. 136 random bits drawn
-- by the enqueuer (rows.receipt_token), unique, found through the index below,
-- which holds only the rows that have one. A row enqueued before this migration has
-- none until an enqueue merges into it, which draws one then.
-- PostgreSQL's migration also adds `watched`, which its statements that end a job
-- read to notify waiters; here the waiters poll, and no statement notifies.
ALTER TABLE jobdef_jobs ADD COLUMN receipt TEXT;
CREATE UNIQUE INDEX jobdef_jobs_receipt ON jobdef_jobs (receipt) WHERE receipt IS NOT NULL;
