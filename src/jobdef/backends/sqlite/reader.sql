-- The reader's queries on SQLite: the reads of the dashboard's pages, with the
-- names and parameters of PostgreSQL's reader.sql (tests/backends/test_drivers.py
-- holds them to it). Every query is bounded: it walks the primary key from a
-- cursor over at most :window rows, or one partial index, or stops at :cap rows,
-- so a page costs the same with a thousand jobs or a million. A list parameter
-- (:ids) comes as JSON text, read with json_each.

-- name: window_floor
-- The id :skip rows below the cursor :before (an index-only walk of the primary
-- key): with :skip 0 the newest job below it, a probe; with the window's size the
-- lower end of the window a filtered page searches, read only when the page does
-- not fill (views.matching). None: the window reaches the first job.
SELECT id FROM jobdef_jobs WHERE id < :before ORDER BY id DESC LIMIT 1 OFFSET :skip;

-- name: jobs_window
-- One page of jobs, newest first, with ids in [:floor, :before) (keyset
-- pagination: no OFFSET over rows). A walk of the primary key down from the
-- cursor that stops at :limit matches or at :floor, whichever comes first; the
-- page says which ids it searched, and its "older" link goes on below them. The
-- args qualifier (:arg_path) matches the string :arg_text, or the JSON number
-- :arg_number or literal :arg_literal (true, false, null) it spells, if any: one
-- json_extract per row (true and false read as :arg_truth, 1 or 0), and the
-- arg's JSON type looked at only for a row whose value is equal, to tell "42" from
-- 42 and true from 1.
SELECT * FROM jobdef_jobs
WHERE id < :before AND id >= :floor
  AND (:state IS NULL OR state = :state)
  AND (:job IS NULL OR job = :job)
  AND (:queue IS NULL OR queue = :queue)
  AND (:since IS NULL OR created_at >= :since)
  AND (:until IS NULL OR created_at < :until)
  AND (:error IS NULL
       OR instr(lower(coalesce(json_extract(last_error, '$.type'), '') || ' '
                      || coalesce(json_extract(last_error, '$.message'), '')),
                lower(:error)) > 0)
  AND (:arg_path IS NULL
       OR (json_extract(args, :arg_path) IN (:arg_text, :arg_number, :arg_truth)
           AND CASE json_type(args, :arg_path)
                 WHEN 'text' THEN 1
                 WHEN 'true' THEN :arg_literal = 'true'
                 WHEN 'false' THEN :arg_literal = 'false'
                 ELSE json_extract(args, :arg_path) = :arg_number
               END)
       OR (:arg_literal = 'null' AND json_type(args, :arg_path) = 'null'))
ORDER BY id DESC
LIMIT :limit;

-- name: newest_ids
-- The newest job, attempt and outbox ids: a change in any is a change to show.
SELECT (SELECT max(id) FROM jobdef_jobs) AS job,
       (SELECT max(id) FROM jobdef_attempts) AS attempt,
       (SELECT max(id) FROM jobdef_outbox) AS outbox,
       (SELECT count(*) FROM (SELECT 1 FROM jobdef_outbox INDEXED BY jobdef_outbox_due
                              WHERE delivered_at IS NULL LIMIT :cap)) AS undelivered;

-- name: recent_attempts
-- The finished attempts that ended since :since, among the newest :cap attempt rows,
-- with their job's queue: the overview's throughput and failure rate, and the starts
-- of rate-limited queues' windows. Rows are written when an attempt ends, so ids
-- follow end times: a binary search over the primary key (about 15 probes of one
-- row each) finds where :since falls in the newest :cap ids, and only the rows
-- above it are read, however many attempts the table holds (64 rows of slack
-- below it catch ends written a little out of order). SQLite allows the recursive
-- table in no subquery, so each step's probe is a scalar subquery, read twice.
WITH RECURSIVE newest(id) AS (
    SELECT coalesce(max(id), 0) FROM jobdef_attempts
),
search(lo, hi) AS (
    SELECT id - :cap, id + 1 FROM newest
    UNION ALL
    SELECT CASE WHEN (SELECT p.finished_at FROM jobdef_attempts AS p
                      WHERE p.id >= (s.lo + s.hi) / 2 ORDER BY p.id LIMIT 1) >= :since
                THEN s.lo ELSE (s.lo + s.hi) / 2 END,
           CASE WHEN (SELECT p.finished_at FROM jobdef_attempts AS p
                      WHERE p.id >= (s.lo + s.hi) / 2 ORDER BY p.id LIMIT 1) >= :since
                THEN (s.lo + s.hi) / 2 ELSE s.hi END
    FROM search AS s
    WHERE s.hi - s.lo > 64
)
SELECT a.started_at, a.finished_at, a.outcome,
       (SELECT j.queue FROM jobdef_jobs AS j WHERE j.id = a.job_id) AS queue
FROM jobdef_attempts AS a
WHERE a.id > max((SELECT max(lo) FROM search) - 64, (SELECT id FROM newest) - :cap)
  AND a.finished_at >= :since;

-- name: running_starts
-- The running jobs that started since :since, at most :cap, read from the index of
-- running rows alone (it holds started_at since migration 0006): the starts of the
-- current rate window that have no attempt row yet.
SELECT queue, started_at FROM jobdef_jobs INDEXED BY jobdef_jobs_running
WHERE state = 'running' AND started_at >= :since
LIMIT :cap;

-- name: dead_groups
-- One job's dead rows grouped by error type, among its newest :cap dead rows (the
-- total is dead_count's).
SELECT coalesce(json_extract(last_error, '$.type'), '(none)') AS error_type,
       count(*) AS count, min(finished_at) AS first_at, max(finished_at) AS last_at,
       max(id) AS newest_id,
       max(json_extract(last_error, '$.message')) AS sample
FROM (SELECT id, last_error, finished_at FROM jobdef_jobs INDEXED BY jobdef_jobs_finished
      WHERE job = :job AND state = 'dead' AND finished_at IS NOT NULL
      ORDER BY finished_at DESC LIMIT :cap) AS d
GROUP BY 1
ORDER BY count DESC;

-- name: dead_group_ids
-- The ids of one job's dead rows whose error type is :error_type ('(none)': no
-- error stored), below the cursor :before, newest first, :limit at most: one batch
-- of a dead letter group's requeue or resolve (the (job, state, finished_at) index).
SELECT id FROM jobdef_jobs INDEXED BY jobdef_jobs_finished
WHERE job = :job AND state = 'dead' AND id < :before AND finished_at IS NOT NULL
  AND coalesce(json_extract(last_error, '$.type'), '(none)') = :error_type
ORDER BY id DESC
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

-- name: queue_paused
-- Whether a pause or resume would change the queue (a probe of the primary key).
SELECT paused FROM jobdef_queues WHERE queue = :queue;

-- name: outbox_retryable
-- Which of :ids (a JSON array) a "retry now" would change: undelivered, and not
-- already due with no sender holding it (primary-key probes).
SELECT id FROM jobdef_outbox
WHERE id IN (SELECT value FROM json_each(:ids)) AND delivered_at IS NULL
  AND (next_at > :now OR lease_until > :now);
