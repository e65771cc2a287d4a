-- A job's result: what the handler of the attempt that finished it `done` returned,
-- as JSON text (checked in the worker's child: plain JSON, at most 64 KiB); NULL
-- when it returned None, or a value that could not be stored. It lives in the job's
-- row, so pruning the row removes it, and a requeue clears it.
ALTER TABLE jobdef_jobs ADD COLUMN result TEXT;
