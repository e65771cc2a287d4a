-- The checks SQLite runs on every change of a job's state cost no lookup table.
--
-- SQLite evaluates `x IN (a, b, c)` with three or more values by building a small
-- table of the values, and inside a CHECK constraint or a partial index's WHERE it
-- builds that table again for every row it writes. A claim and a completion change
-- the state of each job they move, so each job paid for six such tables (about a
-- seventh of the SQL cost of a no-op job). The same tests written as comparisons
-- cost almost nothing:
--
-- - jobdef_jobs' state CHECK lists the same seven states as `=` tests joined by OR.
--   SQLite changes a CHECK in place by rewriting the table's stored definition (its
--   documented procedure for CHECK changes, "Making Other Kinds Of Table Schema
--   Changes"): the rows are not touched, and the new CHECK admits exactly the values
--   the old one did. The index statements below bump the schema's version, so every
--   open connection reads the new definition; RESET makes this one read it too.
-- - jobdef_jobs_finished holds the rows that have ended, now chosen by
--   `finished_at IS NOT NULL`: every statement that ends a job (done, dead, resolved,
--   cancelled) sets finished_at, and the only one that takes a job back out of those
--   states (requeue) clears it, so it holds the same rows as before. Its columns are
--   the same, so prune reads it as before (`finished_at < :before` implies the
--   condition); the dead-letter reads say `finished_at IS NOT NULL`.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
SET sql = replace(sql,
    'CHECK (state IN (''waiting'', ''queued'', ''running'', ''done'', ''dead'', ''resolved'',
                         ''cancelled''))',
    'CHECK (state = ''waiting'' OR state = ''queued'' OR state = ''running''
               OR state = ''done'' OR state = ''dead'' OR state = ''resolved''
               OR state = ''cancelled'')')
WHERE type = 'table' AND name = 'jobdef_jobs';
DROP INDEX jobdef_jobs_finished;
CREATE INDEX jobdef_jobs_finished ON jobdef_jobs (job, state, finished_at)
    WHERE finished_at IS NOT NULL;
PRAGMA writable_schema = RESET;
