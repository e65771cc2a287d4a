-- Receipts: the token an enqueue hands back with the job's id (jobdef.Receipt), which
-- a browser or another service may hold to ask about the job (Queue.status,
-- Queue.wait) where a sequential id would let it guess others. 136 random bits drawn
-- by the enqueuer (rows.receipt_token), unique, found through the index below,
-- which holds only the rows that have one. A row enqueued before this migration has
-- none until an enqueue merges into it, which draws one then.
--
-- `watched`: someone waits for this job to end. A waiter sets it (in the statement
-- that reads the job's state), and the statements that end a job (complete, bury,
-- cancel) notify the waiters' channel for the rows that have it: a drain nobody
-- waits on notifies nothing.
--
-- A nullable column, and one with a constant default: adding them rewrites no row.
-- The index is built in the migration's transaction (not CONCURRENTLY), over the
-- rows that have a receipt, which no row has yet: it is empty when built.
ALTER TABLE {schema}.jobdef_jobs ADD COLUMN receipt text;
ALTER TABLE {schema}.jobdef_jobs ADD COLUMN watched boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX jobdef_jobs_receipt ON {schema}.jobdef_jobs (receipt)
    WHERE receipt IS NOT NULL;
