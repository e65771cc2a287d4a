-- Result retention: the sheet's `result.retention` clears a done job's stored result
-- once that time has passed since the job ended, while the row itself stays until
-- `retention.done` (expire_results). This index holds only the rows that have a
-- result, by job and end, so each batch of that service reads only rows whose
-- result it clears: the cost does not grow with the jobs that have none, and no
-- claim reads it (queued and running rows never have a result).
CREATE INDEX jobdef_jobs_results ON jobdef_jobs (job, finished_at) WHERE result IS NOT NULL;
