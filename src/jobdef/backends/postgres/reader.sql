-- The reader's queries on PostgreSQL: the reads of the dashboard's pages, with the
-- names and parameters of SQLite's reader.sql (see there for what each query is
-- for). Every query is bounded the same way: a window of the primary key, one
-- partial index, or :cap rows. `{schema}` is the store's quoted schema.

-- name: window_floor
SELECT id FROM {schema}.jobdef_jobs WHERE id < %(before)s ORDER BY id DESC LIMIT 1 OFFSET %(skip)s;

-- name: jobs_window
SELECT * FROM {schema}.jobdef_jobs
WHERE id < %(before)s AND id >= %(floor)s
  AND (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(job)s::text IS NULL OR job = %(job)s::text)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(since)s::float8 IS NULL OR created_at >= %(since)s::float8)
  AND (%(until)s::float8 IS NULL OR created_at < %(until)s::float8)
  AND (%(error)s::text IS NULL
       OR strpos(lower(coalesce(last_error ->> 'type', '') || ' '
                       || coalesce(last_error ->> 'message', '')),
                 lower(%(error)s::text)) > 0)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: jobs_by_args
-- One page of the jobs whose args hold :arg_text or :arg_typed (the qualifier's value
-- as a JSON string, and as the number or literal it spells: the same document when it
-- spells none), newest first below the cursor, with the other filters of
-- jobs_window. Containment is what the GIN index jobdef_jobs_args_not_running
-- (jsonb_path_ops, migrations 0006 and 0017) answers for every job but the running
-- ones, which jobdef_jobs_running lists (few: as many as the fleet runs at once): a
-- bitmap scan of each form and one of the running jobs, or'ed, reads only those
-- rows, however many jobs the table holds (the reader turns bitmap scans on for this
-- query), and a running job's containment is checked on its row. Each arm names its
-- index's predicate, which is what lets the planner use a partial index. No window
-- of ids: every job is searched.
SELECT * FROM {schema}.jobdef_jobs
WHERE id < %(before)s
  AND ((state <> 'running' AND args @> %(arg_text)s::jsonb)
       OR (state <> 'running' AND args @> %(arg_typed)s::jsonb)
       OR (state = 'running'
           AND (args @> %(arg_text)s::jsonb OR args @> %(arg_typed)s::jsonb)))
  AND (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(job)s::text IS NULL OR job = %(job)s::text)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(since)s::float8 IS NULL OR created_at >= %(since)s::float8)
  AND (%(until)s::float8 IS NULL OR created_at < %(until)s::float8)
  AND (%(error)s::text IS NULL
       OR strpos(lower(coalesce(last_error ->> 'type', '') || ' '
                       || coalesce(last_error ->> 'message', '')),
                 lower(%(error)s::text)) > 0)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: newest_ids
SELECT (SELECT max(id) FROM {schema}.jobdef_jobs) AS job,
       (SELECT max(id) FROM {schema}.jobdef_attempts) AS attempt,
       (SELECT max(id) FROM {schema}.jobdef_outbox) AS outbox,
       (SELECT count(*) FROM (SELECT 1 FROM {schema}.jobdef_outbox
                              WHERE delivered_at IS NULL LIMIT %(cap)s) AS o) AS undelivered;

-- name: recent_attempts
-- The finished attempts that ended since :since, among the newest :cap attempt rows,
-- with their job's queue: the overview's throughput and failure rate, and the starts
-- of rate-limited queues' windows. Rows are written when an attempt ends, so ids
-- follow end times: a binary search over the primary key (about 15 probes of one
-- row each) finds where :since falls in the newest :cap ids, and only the rows
-- above it are read, however many attempts the table holds (64 rows of slack
-- below it catch ends a concurrent commit wrote a little out of order).
WITH RECURSIVE newest AS (
    SELECT coalesce(max(id), 0) AS id FROM {schema}.jobdef_attempts
),
search(lo, hi) AS (
    SELECT newest.id - %(cap)s, newest.id + 1 FROM newest
    UNION ALL
    SELECT CASE WHEN probe.finished_at >= %(since)s THEN s.lo ELSE (s.lo + s.hi) / 2 END,
           CASE WHEN probe.finished_at >= %(since)s THEN (s.lo + s.hi) / 2 ELSE s.hi END
    FROM search AS s
    CROSS JOIN LATERAL (
        SELECT a.finished_at FROM {schema}.jobdef_attempts AS a
        WHERE a.id >= (s.lo + s.hi) / 2 ORDER BY a.id LIMIT 1
    ) AS probe
    WHERE s.hi - s.lo > 64
)
SELECT a.started_at, a.finished_at, a.outcome,
       (SELECT j.queue FROM {schema}.jobdef_jobs AS j WHERE j.id = a.job_id) AS queue
FROM {schema}.jobdef_attempts AS a
WHERE a.id > greatest((SELECT max(lo) FROM search) - 64, (SELECT id FROM newest) - %(cap)s)
  AND a.finished_at >= %(since)s;

-- name: running_starts
-- The running jobs (the partial index of running rows) that started since :since, at
-- most :cap: the starts of the current rate window that have no attempt row yet.
SELECT queue, started_at FROM {schema}.jobdef_jobs
WHERE state = 'running' AND started_at >= %(since)s
LIMIT %(cap)s;

-- name: dead_groups
SELECT coalesce(last_error ->> 'type', '(none)') AS error_type,
       count(*) AS count, min(finished_at) AS first_at, max(finished_at) AS last_at,
       max(id) AS newest_id,
       max(last_error ->> 'message') AS sample
FROM (SELECT id, last_error, finished_at FROM {schema}.jobdef_jobs
      WHERE job = %(job)s AND state = 'dead' AND finished_at IS NOT NULL
      ORDER BY finished_at DESC LIMIT %(cap)s) AS d
GROUP BY 1
ORDER BY count DESC;

-- name: dead_group_ids
SELECT id FROM {schema}.jobdef_jobs
WHERE job = %(job)s AND state = 'dead' AND finished_at IS NOT NULL AND id < %(before)s
  AND coalesce(last_error ->> 'type', '(none)') = %(error_type)s
ORDER BY id DESC
LIMIT %(limit)s;

-- name: outbox_channels
SELECT channel, count(*) AS pending, count(*) FILTER (WHERE attempts > 0) AS failing,
       min(created_at) AS oldest_at, max(attempts) AS most_attempts
FROM (SELECT channel, attempts, created_at FROM {schema}.jobdef_outbox
      WHERE delivered_at IS NULL ORDER BY next_at, id LIMIT %(cap)s) AS o
GROUP BY channel
ORDER BY channel;

-- name: outbox_messages
SELECT * FROM {schema}.jobdef_outbox
WHERE delivered_at IS NULL
ORDER BY next_at, id
LIMIT %(limit)s;

-- name: recent_slots
SELECT s.slot, s.job_id, j.state
FROM {schema}.jobdef_slots AS s LEFT JOIN {schema}.jobdef_jobs AS j ON j.id = s.job_id
WHERE s.job = %(job)s
ORDER BY s.slot DESC
LIMIT %(limit)s;

-- name: queue_paused
SELECT paused FROM {schema}.jobdef_queues WHERE queue = %(queue)s;

-- name: outbox_retryable
SELECT id FROM {schema}.jobdef_outbox
WHERE id = ANY (%(ids)s::bigint[]) AND delivered_at IS NULL
  AND (next_at > %(now)s OR lease_until > %(now)s);
