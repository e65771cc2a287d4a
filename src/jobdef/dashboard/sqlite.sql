-- The dashboard's reads on SQLite, with the names and parameters of
-- postgres.sql beside it. Every query is bounded: it walks the primary key from
-- a cursor over at most :window rows, or one partial index, or stops at :cap
-- rows, so a page costs the same with a thousand jobs or a million.

-- name: jobs_window
-- One page of jobs, newest first, among the :window jobs below the cursor
-- :before (keyset pagination: no OFFSET). The filters look only at that window;
-- the page says which ids it searched, and its "older" link goes on below them.
SELECT * FROM (
    SELECT * FROM jobdef_jobs WHERE id < :before ORDER BY id DESC LIMIT :window
) AS w
WHERE (:state IS NULL OR state = :state)
  AND (:job IS NULL OR job = :job)
  AND (:queue IS NULL OR queue = :queue)
  AND (:since IS NULL OR created_at >= :since)
  AND (:until IS NULL OR created_at < :until)
  AND (:error IS NULL
       OR instr(lower(coalesce(json_extract(last_error, '$.type'), '') || ' '
                      || coalesce(json_extract(last_error, '$.message'), '')),
                lower(:error)) > 0)
  AND (:arg_path IS NULL OR CAST(json_extract(args, :arg_path) AS TEXT) = :arg_value)
ORDER BY id DESC
LIMIT :limit;

-- name: window_floor
-- The lowest id of the window jobs_window searched: where the next window starts.
SELECT min(id) AS floor, count(*) AS size FROM (
    SELECT id FROM jobdef_jobs WHERE id < :before ORDER BY id DESC LIMIT :window
) AS w;

-- name: newest_ids
-- The newest job, attempt and outbox ids: a change in any is a change to show.
SELECT (SELECT max(id) FROM jobdef_jobs) AS job,
       (SELECT max(id) FROM jobdef_attempts) AS attempt,
       (SELECT max(id) FROM jobdef_outbox) AS outbox,
       (SELECT count(*) FROM (SELECT 1 FROM jobdef_outbox INDEXED BY jobdef_outbox_due
                              WHERE delivered_at IS NULL LIMIT :cap)) AS undelivered;

-- name: recent_attempts
-- The finished attempts among the newest :cap attempt rows (an id range of the
-- primary key: rows are written when an attempt ends, so the newest ids are the
-- latest ends) that ended since :since, with their job's queue: the overview's
-- throughput and failure rate.
SELECT a.finished_at, a.outcome, j.queue
FROM jobdef_attempts AS a
JOIN jobdef_jobs AS j ON j.id = a.job_id
WHERE a.id > (SELECT coalesce(max(id), 0) FROM jobdef_attempts) - :cap
  AND a.finished_at >= :since;

-- name: dead_count
-- One job's dead rows, counted up to :cap through the finished-rows index (the
-- IN term lets SQLite use that partial index).
SELECT count(*) AS count FROM (
    SELECT 1 FROM jobdef_jobs INDEXED BY jobdef_jobs_finished
    WHERE job = :job AND state = 'dead'
      AND state IN ('done', 'dead', 'resolved', 'cancelled') LIMIT :cap
) AS d;

-- name: dead_groups
-- One job's dead rows grouped by error type, among its newest :cap dead rows.
SELECT coalesce(json_extract(last_error, '$.type'), '(none)') AS error_type,
       count(*) AS count, min(finished_at) AS first_at, max(finished_at) AS last_at,
       max(id) AS newest_id,
       max(json_extract(last_error, '$.message')) AS sample
FROM (SELECT id, last_error, finished_at FROM jobdef_jobs INDEXED BY jobdef_jobs_finished
      WHERE job = :job AND state = 'dead'
        AND state IN ('done', 'dead', 'resolved', 'cancelled')
      ORDER BY finished_at DESC LIMIT :cap) AS d
GROUP BY 1
ORDER BY count DESC;

-- name: dead_ids
-- Ids of one job's dead rows with one error type (for "requeue this group"),
-- newest first, :limit at most.
SELECT id FROM jobdef_jobs INDEXED BY jobdef_jobs_finished
WHERE job = :job AND state = 'dead' AND state IN ('done', 'dead', 'resolved', 'cancelled')
  AND coalesce(json_extract(last_error, '$.type'), '(none)') = :error_type
ORDER BY finished_at DESC
LIMIT :limit;

-- name: outbox_channels
-- Undelivered messages per channel, among the oldest :cap, with the newest error.
SELECT channel, count(*) AS pending, sum(attempts > 0) AS failing,
       min(created_at) AS oldest_at, max(attempts) AS most_attempts
FROM (SELECT channel, attempts, created_at FROM jobdef_outbox INDEXED BY jobdef_outbox_due
      WHERE delivered_at IS NULL ORDER BY next_at, id LIMIT :cap) AS o
GROUP BY channel
ORDER BY channel;

-- name: outbox_messages
-- The oldest undelivered messages, :limit at most.
SELECT * FROM jobdef_outbox INDEXED BY jobdef_outbox_due
WHERE delivered_at IS NULL
ORDER BY next_at, id
LIMIT :limit;

-- name: recent_slots
-- One batch job's newest cron slots and the jobs they made (the primary key).
SELECT s.slot, s.job_id, j.state
FROM jobdef_slots AS s LEFT JOIN jobdef_jobs AS j ON j.id = s.job_id
WHERE s.job = :job
ORDER BY s.slot DESC
LIMIT :limit;
