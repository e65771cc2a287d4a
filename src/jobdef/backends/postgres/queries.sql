-- Named queries of the PostgreSQL engine, with the names of the SQLite engine's
-- (sqlite/queries.sql) wherever the two do the same thing. `{schema}` is replaced
-- by the quoted schema name when the file is loaded; parameters are psycopg's
-- `%(name)s`. All times are epoch seconds from the engine's clock (`%(now)s`),
-- which is the server's clock_timestamp() read now and then (clock.py), so every
-- host writes and compares the same times; a test may give the engine another.
--
-- How this file differs from SQLite's throughout, so the blocks below do not
-- repeat it:
-- - Lists are PostgreSQL arrays (`%(ids)s::bigint[]`, read with `unnest` or
--   `= ANY`) where SQLite passes a JSON text read with `json_each`; so one
--   statement serves a whole batch where SQLite runs one per row.
-- - args, progress, errors and payloads are `jsonb` (SQLite: JSON in TEXT), cast
--   from the text both engines write (jobdef.backends.rows.dump_json).
-- - No `INDEXED BY`: the planner picks the index; this engine's sessions turn
--   bitmap scans off (session_settings) so it walks the claim indexes as SQLite does.
-- - `greatest(a, b)` is SQLite's two-argument `max(a, b)`.
-- - Many workers on many hosts share the tables, so every statement that takes
--   rows (claims, outbox, prune) locks them with `FOR UPDATE SKIP LOCKED`;
--   SQLite has one writer at a time and needs no row locks.
-- - A statement that makes jobs runnable wakes listening workers with
--   `pg_notify` (delivered at commit); SQLite workers poll.
-- - A fenced move (retry_job, bury_job, release_job, complete_jobs) writes its
--   attempts rows in the same statement, through a data-modifying CTE
--   (`history`), and complete_jobs the messages of the jobs it finished too
--   (`outbox`); SQLite's engine runs a second statement for each.
--
-- A fragment is one or more whole CTEs; a query includes it with
-- `-- include: NAME` (`-- include: NAME,` when another CTE follows).

-- name: session_settings
-- PostgreSQL only. Run once per engine session; see SessionManager._open_session for why.
-- No JIT: every statement here is a short index walk, and a statement the planner
-- misjudges as costly (stale statistics on a big table) would spend tens of
-- milliseconds compiling what runs in one.
-- A lost client is looked for every 250 ms while a statement runs: a worker killed
-- while its statement waits on a row or table lock (an operator's transaction, a
-- migration) would otherwise have that statement run on when the lock goes, and a
-- completion that claims (complete_and_claim) would lease jobs to the dead worker,
-- each then charged a reclaimed attempt that never started. The server aborts it
-- instead. PostgreSQL 14 and later on Linux, macOS and the BSDs; set through
-- pg_settings so that an older server, which lacks the setting, sets nothing.
SET enable_bitmapscan = off; SET jit = off;
SELECT set_config(name, '250ms', false) FROM pg_settings
WHERE name = 'client_connection_check_interval';

-- name: fixed_plans
-- PostgreSQL only. Before the statements of a worker's turn (claim_jobs,
-- complete_jobs, complete_and_claim, and the change notification sent between two
-- turns) when the session's last statement was another; fresh_plans undoes it
-- before any other (SessionManager.run). PostgreSQL plans a prepared statement
-- anew at every execution while it judges a custom plan cheaper than the generic
-- one, and it always does here: a generic plan must guess the claim's LIMIT (a
-- tenth of the queued rows). complete_and_claim takes ~0.3 ms to plan (three
-- reads of a table with a dozen partial indexes), as much as it takes to run a
-- turn of ten jobs. So these statements are planned once per session. Without
-- sequential scans: a plan made once must hold as the table grows, and one made
-- on an empty table would read it whole to lease a few rows by id; with them
-- off, each table is read through the index the statement is written for.
-- Both settings are set by name: every server the store runs on has them
-- (plan_cache_mode since PostgreSQL 12; the store needs 13, for gen_random_uuid in
-- migration 0008). Read from pg_settings, as session_settings does its optional
-- one, this and fresh_plans cost the server ~0.5 ms each (the view makes a row of
-- every setting the server has), at each switch: around the statements a worker
-- runs between two turns, but those planned alike either way, which keep the
-- session's planning as it is (engine.PLANNED_EITHER_WAY: its beat in the registry,
-- its read of the workers table, its look for expired leases).
SELECT set_config('plan_cache_mode', 'force_generic_plan', false),
       set_config('enable_seqscan', 'off', false);

-- name: fresh_plans
-- PostgreSQL only: back to the session's defaults (see fixed_plans) for every
-- statement other than a turn's: their plans depend on their parameters (an
-- optional filter, a rare state). RESET restores what the session started with
-- (the server's, the database's or the role's setting, or the URL's `options`).
RESET plan_cache_mode; RESET enable_seqscan;

-- name: one_snapshot
-- PostgreSQL only: the first statement of a transaction whose reads must see
-- one snapshot (a job's attempts and its row). READ COMMITTED takes a snapshot
-- per statement; SQLite's read transaction sees one already.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;

-- name: reserve_job_ids
-- PostgreSQL only (SQLite reads each new id from lastrowid). Draw ids up front
-- for the jobs of a batch that take a cron slot: insert_slot needs each one's id
-- before its row is inserted.
SELECT nextval(pg_get_serial_sequence('{schema}.jobdef_jobs', 'id'))
FROM generate_series(1, %(n)s);

-- fragment: wake_workers
-- Wakes the idle workers whose turn the jobs of an enqueue are (`woken`: a row per
-- queue that got jobs, with `n` jobs, the first `first_id`, and `due` when every one
-- is delayed), jobdef.runtime.wake_share's rule read here from the workers table, on
-- the store's clock at the enqueue (`now`): among the live workers of the queue
-- (`size`, ranked by id), the `n` from rank `first_id mod size` on take the first
-- turn, the next `n` the backup turn, each told on its own channel (`queue n
-- first_id due at turn`); all of them when `n` is at least `size`. So an idle worker
-- whose turn it is not is not woken at all. When a live worker of the queue listens
-- on the schema's channel only (an earlier jobdef's: no own channel), or no worker
-- of the queue is live, the schema's channel is told instead (`queue n first_id due
-- at`), and each worker listening there takes its turn by the same rule from its own
-- reading of the table. Workers that do not listen ('': ?wake=poll) take no turn.
-- The notifications are delivered when the transaction commits.
live AS (
    SELECT id, queues, wake_channel FROM {schema}.jobdef_workers
    WHERE %(now)s::float8 - last_beat <= lease_seconds AND wake_channel IS DISTINCT FROM ''
),
turns AS (
    SELECT k.queue, k.n, k.first_id, k.due, w.wake_channel,
           count(*) OVER queue_workers AS size,
           count(*) FILTER (WHERE w.wake_channel IS NULL) OVER queue_workers AS unaddressed,
           row_number() OVER queue_workers - 1 AS rank
    FROM woken AS k JOIN live AS w ON w.queues IS NULL OR w.queues::jsonb ? k.queue
    -- One pass over the sorted workers, in Python's order of the ids (the rule's);
    -- the counts over the whole queue, not up to the row.
    WINDOW queue_workers AS (
        PARTITION BY k.queue ORDER BY w.id COLLATE "C"
        ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
    )
),
told AS (
    SELECT t.wake_channel AS channel, t.queue, t.n, t.first_id, t.due,
           CASE WHEN t.n >= t.size OR t.behind < t.n THEN 'first' ELSE 'backup' END AS turn
    FROM (
        SELECT *, mod(mod(rank - first_id, size) + size, size) AS behind
        FROM turns WHERE unaddressed = 0
    ) AS t
    WHERE t.n >= t.size OR t.behind < 2 * t.n
    UNION ALL
    SELECT %(channel)s, k.queue, k.n, k.first_id, k.due, NULL
    FROM woken AS k
    WHERE NOT EXISTS (SELECT 1 FROM turns AS t WHERE t.queue = k.queue AND t.unaddressed = 0)
),
notified AS (
    SELECT pg_notify(
        channel, concat_ws(' ', queue, n, first_id, coalesce(due::text, '-'), %(now)s, turn)
    )
    FROM told
)

-- name: insert_jobs
-- PostgreSQL only (SQLite inserts one row per job with insert_job). Insert a
-- batch in one statement from one JSON array of rows (`rows`: one encode of the
-- batch in the client and one parse in the server, where an array per column
-- would cost the client a conversion per value): a row's `id` is its reserved
-- one (a slotted job's), else drawn here, in the batch's order (`ord`: the
-- server draws a volatile column after the ORDER BY). A job whose key is
-- already active is skipped (the caller merges it into the active one); the
-- caller tells the inserted rows by their receipt tokens, each its own. Wakes
-- listening workers of each queue that got a job: the notification is
-- delivered when the transaction commits, and says `queue count first_id due
-- at` (jobdef.backends.records.Wakeup): from the first three each idle worker
-- tells whether it is one of those that claim them (jobdef.runtime.wake_share);
-- `due`, when every job is delayed, is the first one's run_after (those workers
-- claim then, not now), else `-`; `at` is the enqueue's clock, by which the jobs
-- due now are due: a worker whose claim finds nothing then knows whether another
-- took them or its clock is behind the enqueuer's. `notified` is read in the
-- final SELECT because a CTE that nothing reads is never run.
WITH inserted AS (
    INSERT INTO {schema}.jobdef_jobs (
        id, job, queue, priority, args, state, attempt, max_attempts,
        idempotency_key, run_after, created_at, updated_at, slot, receipt,
        trace_context, positional_args
    )
    SELECT coalesce(
               n.id,
               nextval((SELECT pg_get_serial_sequence('{schema}.jobdef_jobs', 'id'))::regclass)
           ),
           n.job, n.queue, n.priority, n.args, 'queued', 0, n.max_attempts,
           n.key, n.run_after, %(now)s, %(now)s, n.slot, n.receipt,
           n.trace_context, n.positional_args
    FROM jsonb_to_recordset(%(rows)s::jsonb) AS n(
        ord int, id bigint, job text, queue text, priority int, args jsonb,
        max_attempts int, key text, run_after float8, slot float8, receipt text,
        trace_context text, positional_args int
    )
    ORDER BY n.ord
    ON CONFLICT (job, idempotency_key)
        WHERE state IN ('queued', 'running') AND idempotency_key IS NOT NULL
        DO NOTHING
    RETURNING id, queue, receipt, run_after
),
woken AS (
    SELECT queue, count(*) AS n, min(id) AS first_id,
           -- every job delayed: when the first is due
           CASE WHEN min(run_after) > %(now)s THEN min(run_after) END AS due
    FROM inserted GROUP BY queue
),
-- include: wake_workers
SELECT id, receipt FROM inserted WHERE (SELECT count(*) FROM notified) >= 0;

-- name: insert_alike_jobs
-- PostgreSQL only. A batch whose jobs differ in their args alone, none with a key
-- or a slot (so none merges into another job): Queue.enqueue_many's common case.
-- What the jobs share is sent once, the args (JSON text, as the queue encoded them
-- to check their size) and the receipt tokens as one array each; no ON CONFLICT (a
-- row without a key cannot conflict, and a speculative insert costs a WAL record a
-- row) and no sort (ids are drawn in the arrays' order). Notifies as insert_jobs.
WITH inserted AS (
    INSERT INTO {schema}.jobdef_jobs (
        job, queue, priority, args, state, attempt, max_attempts,
        run_after, created_at, updated_at, receipt, trace_context, positional_args
    )
    SELECT %(job)s, %(queue)s, %(priority)s, n.args, 'queued', 0, %(max_attempts)s,
           %(run_after)s, %(now)s, %(now)s, n.receipt, %(trace_context)s, %(positional_args)s
    FROM ROWS FROM (
        jsonb_array_elements(%(args)s::jsonb), unnest(string_to_array(%(receipts)s, ' '))
    ) AS n(args, receipt)
    RETURNING id, receipt
),
woken AS (
    SELECT %(queue)s::text AS queue, count(*) AS n, min(id) AS first_id,
           CASE WHEN %(run_after)s::float8 > %(now)s::float8 THEN %(run_after)s::float8 END AS due
    FROM inserted HAVING count(*) > 0
),
-- include: wake_workers
SELECT id, receipt FROM inserted WHERE (SELECT count(*) FROM notified) >= 0;

-- name: insert_job
-- One job without a key, slot or dedupe window: a single round trip. Differs
-- from SQLite's: jobs with a key or a slot go through insert_jobs here (a batch
-- that merges duplicates with ON CONFLICT), so this one takes neither; and it
-- notifies the listening workers (`queue 1 id due at`, as insert_jobs says).
WITH inserted AS (
    INSERT INTO {schema}.jobdef_jobs (
        job, queue, priority, args, state, attempt, max_attempts,
        run_after, created_at, updated_at, receipt
    )
    VALUES (%(job)s, %(queue)s, %(priority)s, %(args)s::jsonb, 'queued', 0, %(max_attempts)s,
            %(run_after)s, %(now)s, %(now)s, %(receipt)s)
    RETURNING id, queue, run_after
),
woken AS (
    SELECT queue, 1 AS n, id AS first_id,
           CASE WHEN run_after > %(now)s THEN run_after END AS due
    FROM inserted
),
-- include: wake_workers
SELECT id FROM inserted WHERE (SELECT count(*) FROM notified) >= 0;

-- name: find_duplicate
-- For each key of the batch, the job a new enqueue merges into: the active
-- one, else (with a dedupe window) the newest done within its window. SQLite
-- asks for one key per call; here one statement answers the whole batch,
-- each answer tagged with the job's ordinal in it (`ord`, DISTINCT ON it).
SELECT DISTINCT ON (w.ord) w.ord, j.id, j.receipt
FROM unnest(%(ords)s::int[], %(jobs)s::text[], %(keys)s::text[], %(since)s::float8[])
    AS w(ord, job, key, since)
JOIN {schema}.jobdef_jobs AS j ON j.job = w.job AND j.idempotency_key = w.key
WHERE j.state IN ('queued', 'running')
   OR (j.state = 'done' AND w.since IS NOT NULL AND j.finished_at >= w.since)
ORDER BY w.ord, (j.state IN ('queued', 'running')) DESC, j.id DESC;

-- name: insert_slot
-- Reserve cron slots; the slots returned were free and are now taken by these ids.
-- SQLite inserts one slot after it checked with find_slot (one writer, no race);
-- here concurrent enqueues of one slot race, so the insert comes first and
-- ON CONFLICT DO NOTHING decides which one took it.
INSERT INTO {schema}.jobdef_slots (job, slot, job_id)
SELECT * FROM unnest(%(jobs)s::text[], %(slots)s::float8[], %(ids)s::bigint[])
ON CONFLICT DO NOTHING
RETURNING job_id;

-- name: last_slot
-- The newest slot ever stored for a job; the primary key (job, slot) serves it.
SELECT max(slot) AS slot FROM {schema}.jobdef_slots WHERE job = %(job)s;

-- name: find_slot
-- The job that holds each already-taken slot, and its receipt (NULL when the job
-- was pruned since): the slots insert_slot lost, for the whole batch at once
-- (SQLite: one slot per call, before inserting).
SELECT w.ord, s.job_id, j.receipt
FROM unnest(%(ords)s::int[], %(jobs)s::text[], %(slots)s::float8[]) AS w(ord, job, slot)
JOIN {schema}.jobdef_slots AS s ON s.job = w.job AND s.slot = w.slot
LEFT JOIN {schema}.jobdef_jobs AS j ON j.id = s.job_id;

-- name: assign_receipt
-- A receipt for each job that has none (enqueued before receipts) that an enqueue
-- merged into; the one it has otherwise. A job that is gone returns no row. The
-- batch's jobs in one statement (SQLite: one per call).
UPDATE {schema}.jobdef_jobs AS j SET receipt = coalesce(j.receipt, a.receipt)
FROM unnest(%(ids)s::bigint[], %(receipts)s::text[]) AS a(id, receipt)
WHERE j.id = a.id
RETURNING j.id, j.receipt;

-- name: repoint_slot
-- PostgreSQL only: ids are reserved before the insert (reserve_job_ids), so a
-- slot can be taken for an id whose row then merged into an active job. A slot reserved for a row that was merged into an active job points at that job.
UPDATE {schema}.jobdef_slots AS s SET job_id = m.merged_id
FROM unnest(%(reserved_ids)s::bigint[], %(merged_ids)s::bigint[]) AS m(reserved_id, merged_id)
WHERE s.job_id = m.reserved_id;

-- name: ensure_queue_rows
-- PostgreSQL only: the limited claim locks queue rows (SQLite has one writer and
-- creates a queue's row when it first spends a token, spend_tokens). Limited queues (a cap or a rate) need a row to lock; create the missing ones.
INSERT INTO {schema}.jobdef_queues (queue)
SELECT unnest(%(queues)s::text[])
ON CONFLICT DO NOTHING;

-- name: lock_limited_queues
-- PostgreSQL only; SQLite reads the same buckets with queue_buckets, and its
-- single writer needs no lock. Serialize claims on each limited queue that has runnable work, so neither the
-- running count that the claim reads next nor the queue's token bucket can be
-- raced by another worker. Locked in name order: two workers never wait on
-- each other in a cycle.
SELECT q.queue, q.tokens, q.tokens_at
FROM {schema}.jobdef_queues AS q
WHERE q.queue = ANY (%(limited)s::text[])
  AND NOT q.paused
  AND EXISTS (
      SELECT 1 FROM {schema}.jobdef_jobs AS j
      WHERE j.state = 'queued' AND j.queue = q.queue AND j.run_after <= %(now)s
  )
ORDER BY q.queue
FOR UPDATE OF q;

-- fragment: queued_queues
-- `present`, the queues that have queued jobs (and a last NULL row that ends the
-- recursion): a skip scan of jobdef_jobs_claim_queue, one index probe per queue
-- however many jobs each holds (PostgreSQL has no skip scan of its own: a recursive
-- one). A query that includes it says WITH RECURSIVE.
present AS (
    (SELECT j.queue FROM {schema}.jobdef_jobs AS j
     WHERE j.state = 'queued' ORDER BY j.queue LIMIT 1)
    UNION ALL
    SELECT (SELECT j.queue FROM {schema}.jobdef_jobs AS j
            WHERE j.state = 'queued' AND j.queue > present.queue
            ORDER BY j.queue LIMIT 1)
    FROM present WHERE present.queue IS NOT NULL
)

-- fragment: walk
-- `walk`: a claim over every queue while none is paused walks the claim index from
-- its head and stops after `limit` rows, locked with SKIP LOCKED. While a queue is
-- paused it takes nothing (a one-time filter of the plan): the engine then claims
-- by queue (claim_jobs_by_queue), told by `any_paused`. Filtering the paused
-- queue's jobs out here instead would read, and throw away, its whole backlog at
-- each claim of each worker.
walk AS (
    SELECT j.id
    FROM {schema}.jobdef_jobs AS j
    WHERE NOT EXISTS (SELECT 1 FROM {schema}.jobdef_queues AS p WHERE p.paused)
      AND j.state = 'queued'
      AND j.run_after <= %(now)s
    ORDER BY j.priority DESC, j.run_after, j.id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
chosen AS (
    SELECT walk.id FROM walk
)

-- fragment: served_queues
-- `served`, each queue a claim by queue reads (queue_picks), `limit` jobs at most
-- each: the queues named (a worker's --queues), or, for a claim of every queue
-- while one is paused, every queue with queued jobs (`present`, from
-- queued_queues); the paused ones left out. Walking the claim index instead would
-- read, and throw away, every queued job of the other queues ahead of them: a
-- worker serving one queue while another has a backlog read that backlog whole at
-- each claim.
served AS (
    SELECT named.queue, %(limit)s AS take
    FROM (
        SELECT q.queue FROM unnest(%(queues)s::text[]) AS q(queue)
        UNION ALL
        SELECT present.queue FROM present
        WHERE %(queues)s::text[] IS NULL AND present.queue IS NOT NULL
    ) AS named
    WHERE named.queue <> ALL (ARRAY(
        SELECT p.queue FROM {schema}.jobdef_queues AS p WHERE p.paused
    ))
)

-- fragment: queue_picks
-- `picks`: each queue of `served` (queue, take) read on its own through the
-- per-queue claim index, at most `take` runnable jobs in claim order, locked with
-- SKIP LOCKED until commit (other workers skip them, whether or not the claim
-- leases them); so a claim costs a few index probes per queue, however long the
-- backlog of a queue it does not take. The queue is bounded on both sides rather
-- than by `=`, and leads the ORDER BY: with `=`, the planner drops the queue from
-- the order as fixed, both claim indexes then give it, and statistics that saw one
-- queue only (a backlog of one, analysed before the next queue came) made it walk
-- the claim index with the queue as a filter, the backlog and all. This way only
-- the per-queue index gives the order, bounded to the one queue.
picks AS (
    SELECT c.id, c.priority, c.run_after
    FROM served
    CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.run_after
        FROM {schema}.jobdef_jobs AS j
        WHERE j.state = 'queued' AND j.run_after <= %(now)s
          AND j.queue >= served.queue AND j.queue <= served.queue
        ORDER BY j.queue, j.priority DESC, j.run_after, j.id
        LIMIT served.take
        FOR UPDATE SKIP LOCKED
    ) AS c
)

-- fragment: choose_picked
-- `chosen`: the picks of every queue read (queue_picks), at most `limit` in claim order.
chosen AS (
    SELECT picks.id FROM picks
    ORDER BY picks.priority DESC, picks.run_after, picks.id
    LIMIT %(limit)s
)

-- fragment: lease_chosen
-- Lease the `chosen` jobs to the worker: the step every claim ends with. Their ids
-- are read as one array, so the rows are found through the primary key: a join
-- with `chosen` is planned as a hash join over a scan of the whole table, done
-- rows included, on every claim.
claimed AS (
    UPDATE {schema}.jobdef_jobs AS j
    SET state = 'running',
        attempt = j.attempt + 1,
        worker_id = %(worker_id)s,
        started_at = %(now)s,
        lease_until = %(lease_until)s,
        updated_at = %(now)s
    WHERE j.id = ANY (ARRAY(SELECT chosen.id FROM chosen))
    RETURNING j.*
)

-- name: claim_jobs
-- Take up to `limit` runnable jobs of every queue, priority desc, run_after, id,
-- and lease them to the worker: one statement walking the claim index with SKIP
-- LOCKED, so concurrent workers never wait on each other and it stops after
-- `limit` rows. One row comes back even when nothing was claimed: `any_paused`
-- says whether a queue is paused, in which case the walk took nothing and the
-- engine claims by queue instead (claim_jobs_by_queue), now and until a claim says
-- no queue is paused. SQLite's is one UPDATE ... WHERE id IN (SELECT ... LIMIT),
-- or its steps queue by queue; PostgreSQL has no LIMIT on UPDATE and must lock
-- what it picks, hence the CTEs.
WITH
-- include: walk,
-- include: lease_chosen
SELECT flag.any_paused, claimed.*
FROM (SELECT EXISTS (SELECT 1 FROM {schema}.jobdef_queues AS p WHERE p.paused)
             AS any_paused) AS flag
LEFT JOIN claimed ON true;

-- name: claim_jobs_by_queue
-- claim_jobs for a worker of named queues (--queues), and for every claim while a
-- queue is paused: each queue it may take read on its own, through the per-queue
-- index, and merged in claim order (served_queues, queue_picks). Its rows as
-- claim_jobs's, `any_paused` first.
WITH RECURSIVE
-- include: queued_queues,
-- include: served_queues,
-- include: queue_picks,
-- include: choose_picked,
-- include: lease_chosen
SELECT flag.any_paused, claimed.*
FROM (SELECT EXISTS (SELECT 1 FROM {schema}.jobdef_queues AS p WHERE p.paused)
             AS any_paused) AS flag
LEFT JOIN claimed ON true;

-- name: claim_jobs_limited
-- PostgreSQL only: SQLite runs the same steps as separate statements inside its
-- one write transaction (queues_with_queued, queue_candidates per queue,
-- running_per_queue, claim_ids, spend_tokens). claim_jobs when some queues have a concurrency limit or a start rate. Each
-- queue that has queued jobs is read on its own through the per-queue claim
-- index, with SKIP LOCKED, and the picks are merged in claim order; so a claim
-- costs a few index probes per queue, however deep a capped queue's backlog is.
-- A locked limited queue gives at most its free places under its cap and no
-- more than its token bucket allows (`allowances`; least() skips the NULL of a
-- limit the queue does not have); no queue gives more than `limit`: each row
-- picked here stays locked until commit, and other workers skip it. Limited
-- queues not locked by this transaction (`limited_all` minus `limited`) are
-- skipped. The same statement takes one token per claimed job from the buckets
-- of the locked rate-limited queues (`rated`).
WITH RECURSIVE
-- include: queued_queues,
room AS (
    SELECT l.queue,
           least(
               l.cap - (
                   SELECT count(*) FROM {schema}.jobdef_jobs AS r
                   WHERE r.state = 'running' AND r.queue = l.queue
               ),
               l.allowance
           ) AS free
    FROM unnest(%(limited)s::text[], %(caps)s::int[], %(allowances)s::int[])
        AS l(queue, cap, allowance)
),
served AS (
    SELECT p.queue, least(greatest(coalesce(room.free, %(limit)s), 0), %(limit)s) AS take
    FROM present AS p
    LEFT JOIN room ON room.queue = p.queue
    WHERE p.queue IS NOT NULL
      AND (p.queue <> ALL (%(limited_all)s::text[]) OR room.queue IS NOT NULL)
      AND (%(queues)s::text[] IS NULL OR p.queue = ANY (%(queues)s::text[]))
      AND p.queue NOT IN (SELECT q.queue FROM {schema}.jobdef_queues AS q WHERE q.paused)
),
-- include: queue_picks,
chosen AS (
    SELECT id FROM picks
    ORDER BY priority DESC, run_after, id
    LIMIT %(limit)s
),
-- include: lease_chosen,
-- Each locked rate-limited queue's bucket: what it held at `now` (`refilled`,
-- computed by jobdef.policy.queue_controls.Bucket) less one token per job claimed.
spent AS (
    UPDATE {schema}.jobdef_queues AS q
    SET tokens = b.tokens - (SELECT count(*) FROM claimed AS c WHERE c.queue = b.queue),
        tokens_at = %(now)s
    FROM unnest(%(rated)s::text[], %(refilled)s::float8[]) AS b(queue, tokens)
    WHERE q.queue = b.queue
)
SELECT * FROM claimed;

-- name: heartbeat
-- As on SQLite; progress is cast to jsonb.
UPDATE {schema}.jobdef_jobs
SET lease_until = %(lease_until)s,
    progress = coalesce(%(progress)s::jsonb, progress),
    updated_at = %(now)s
WHERE id = %(job_id)s AND state = 'running'
  AND attempt = %(attempt)s AND worker_id = %(worker_id)s;

-- fragment: finish_done
-- The leases' ids, attempts and workers come as the text of an array each, which
-- the engine writes (engine._complete_params): a batch's lists are the most a
-- worker sends, and psycopg would dump them a value at a time; the results, when
-- there are any, as an array in binary (`%(name)b`), NULL when there are none.
-- Four CTEs: finish every attempt whose lease still holds (`finished`), with
-- the handler's return value as its result (`results`: JSON text checked by the
-- worker's child, or NULL), record each finished attempt (`history`), store
-- the outbox messages of the finished jobs only (`outbox`; `note_*` arrays,
-- keyed by job id), and tell the waiters of the finished jobs that have any
-- (`ended`: `watched`, see ended_notify). A query that includes it reads
-- `ended` in its last SELECT, since a CTE that nothing reads is never run.
finished AS (
    UPDATE {schema}.jobdef_jobs AS j
    SET state = 'done', finished_at = %(now)s, lease_until = NULL, updated_at = %(now)s,
        result = l.result::jsonb
    FROM unnest(%(ids)s::bigint[], %(attempts)s::int[], %(workers)s::text[],
                %(results)b::text[])
        AS l(id, attempt, worker_id, result)
    WHERE j.id = l.id AND j.state = 'running'
      AND j.attempt = l.attempt AND j.worker_id = l.worker_id
    RETURNING j.id, j.attempt, j.worker_id, j.started_at, j.watched
),
history AS (
    INSERT INTO {schema}.jobdef_attempts (job_id, attempt, worker_id, started_at, finished_at, outcome)
    SELECT id, attempt, worker_id, started_at, %(now)s, 'done' FROM finished
),
outbox AS (
    INSERT INTO {schema}.jobdef_outbox
        (message_id, channel, event, job, payload, next_at, created_at)
    SELECT n.message_id, n.channel, n.event, n.job, n.payload::jsonb, %(now)s, %(now)s
    FROM unnest(
        %(note_job_ids)s::bigint[], %(message_ids)s::text[], %(channels)s::text[],
        %(events)s::text[], %(jobs)s::text[], %(payloads)s::text[]
    ) AS n(job_id, message_id, channel, event, job, payload)
    JOIN finished AS f ON f.id = n.job_id
    ON CONFLICT (message_id) DO NOTHING
),
ended AS (
    SELECT pg_notify(%(ended_channel)s, id::text) FROM finished WHERE watched
)

-- name: complete_jobs
-- Group commit: finish every attempt whose lease still holds, in one statement,
-- record each finished attempt, and store the outbox messages of the finished
-- jobs only (`note_*` arrays, keyed by job id).
WITH
-- include: finish_done
SELECT id FROM finished WHERE (SELECT count(*) FROM ended) >= 0;

-- fragment: turn_done
-- `done`, one row: the ids of the jobs a turn finished (`done_ids`), and whether a
-- queue is paused (`any_paused`, as claim_jobs says it). Reading `ended` runs it.
done AS (
    SELECT coalesce(array_agg(id), '{}') AS done_ids,
           EXISTS (SELECT 1 FROM {schema}.jobdef_queues AS p WHERE p.paused) AS any_paused
    FROM finished
    WHERE (SELECT count(*) FROM ended) >= 0
)

-- name: complete_and_claim
-- PostgreSQL only (SQLite runs complete_jobs then claim_jobs in one
-- transaction: its commit, not its round trips, is what costs).
-- A worker's turn in one statement (one round trip, one commit): complete_jobs,
-- then claim_jobs. The two touch different rows (running ones, queued ones),
-- so one snapshot serves both. One row comes back even when nothing was
-- claimed: `done_ids` are the finished jobs, `any_paused` as claim_jobs's, the
-- other columns a claimed one. Only the first row carries `done_ids` (NULL on the
-- others): on every row, a batch's array would be written by the server and read
-- by the worker once per claimed job, the batch's size squared.
WITH
-- include: finish_done,
-- include: walk,
-- include: lease_chosen,
-- include: turn_done
SELECT CASE WHEN row_number() OVER () = 1 THEN done.done_ids END AS done_ids,
       done.any_paused, claimed.*
FROM done LEFT JOIN claimed ON true;

-- name: complete_and_claim_by_queue
-- complete_and_claim with the claim of claim_jobs_by_queue: a turn of a worker of
-- named queues, and every turn while a queue is paused.
WITH RECURSIVE
-- include: finish_done,
-- include: queued_queues,
-- include: served_queues,
-- include: queue_picks,
-- include: choose_picked,
-- include: lease_chosen,
-- include: turn_done
SELECT CASE WHEN row_number() OVER () = 1 THEN done.done_ids END AS done_ids,
       done.any_paused, claimed.*
FROM done LEFT JOIN claimed ON true;

-- name: retry_job
-- Back to the queue after a failed attempt; `last_error` and `last_delay` feed
-- the next backoff. The worker id is cleared: nobody holds the job now. It wakes
-- the workers when the retry is due at once. A reclaim (outcome `reclaimed`) also
-- needs the lease to have expired on the engine's clock, checked in this
-- statement: a heartbeat that renewed it after the reclaimer read it keeps the job.
WITH moved AS (
    UPDATE {schema}.jobdef_jobs
    SET state = 'queued', run_after = %(run_after)s, last_delay = %(delay)s,
        last_error = %(error)s::jsonb, worker_id = NULL, lease_until = NULL, updated_at = %(now)s
    WHERE id = %(job_id)s AND state = 'running'
      AND attempt = %(attempt)s AND worker_id = %(worker_id)s
      AND (%(outcome)s::text <> 'reclaimed' OR lease_until < %(now)s)
    RETURNING id, queue, started_at
),
history AS (
    INSERT INTO {schema}.jobdef_attempts
        (job_id, attempt, worker_id, started_at, finished_at, outcome, error)
    SELECT id, %(attempt)s, %(worker_id)s, started_at, %(now)s, %(outcome)s, %(error)s::jsonb
    FROM moved
),
notified AS (
    SELECT pg_notify(%(channel)s, queue) FROM moved WHERE %(run_after)s <= %(now)s
)
SELECT id FROM moved WHERE (SELECT count(*) FROM notified) >= 0;

-- name: bury_job
-- A reclaim needs the lease expired, as retry_job. It tells the job's waiters, if
-- it has any (ended_notify).
WITH moved AS (
    UPDATE {schema}.jobdef_jobs
    SET state = 'dead', finished_at = %(now)s, last_error = %(error)s::jsonb,
        lease_until = NULL, updated_at = %(now)s
    WHERE id = %(job_id)s AND state = 'running'
      AND attempt = %(attempt)s AND worker_id = %(worker_id)s
      AND (%(outcome)s::text <> 'reclaimed' OR lease_until < %(now)s)
    RETURNING id, started_at, watched
),
history AS (
    INSERT INTO {schema}.jobdef_attempts
        (job_id, attempt, worker_id, started_at, finished_at, outcome, error)
    SELECT id, %(attempt)s, %(worker_id)s, started_at, %(now)s, %(outcome)s, %(error)s::jsonb
    FROM moved
),
-- include: ended_notify
SELECT id FROM moved WHERE (SELECT count(*) FROM ended) >= 0;

-- name: release_job
-- Give the job back without spending the attempt (the worker is shutting down);
-- it wakes the workers.
WITH moved AS (
    UPDATE {schema}.jobdef_jobs
    SET state = 'queued', attempt = attempt - 1, worker_id = NULL, lease_until = NULL,
        updated_at = %(now)s
    WHERE id = %(job_id)s AND state = 'running'
      AND attempt = %(attempt)s AND worker_id = %(worker_id)s
    RETURNING id, queue, started_at
),
history AS (
    INSERT INTO {schema}.jobdef_attempts
        (job_id, attempt, worker_id, started_at, finished_at, outcome)
    SELECT id, %(attempt)s, %(worker_id)s, started_at, %(now)s, 'released' FROM moved
),
notified AS (
    SELECT pg_notify(%(channel)s, queue) FROM moved
)
SELECT id FROM moved WHERE (SELECT count(*) FROM notified) >= 0;

-- name: insert_outbox
-- Messages of a transition, in the transition's transaction; a message id
-- already stored (a repeated transition) is not stored twice. All the
-- transition's messages in one statement (SQLite: one per message).
INSERT INTO {schema}.jobdef_outbox
    (message_id, channel, event, job, payload, next_at, created_at)
SELECT n.message_id, n.channel, n.event, n.job, n.payload::jsonb, %(now)s, %(now)s
FROM unnest(
    %(message_ids)s::text[], %(channels)s::text[], %(events)s::text[],
    %(jobs)s::text[], %(payloads)s::text[]
) AS n(message_id, channel, event, job, payload)
ON CONFLICT (message_id) DO NOTHING;

-- fragment: ended_notify
-- `ended`: tell the waiters of the jobs a statement ended (`moved`, with each
-- row's `watched`) that have any, one notification per job on the waiters'
-- channel, its payload the job's id (jobdef.backends.postgres.ends). A job
-- nobody waits for notifies nothing: a drain without waiters pays nothing for
-- them. SQLite's waiters poll, and its statements notify no one.
ended AS (
    SELECT pg_notify(%(ended_channel)s, id::text) FROM moved WHERE watched
)

-- name: cancel_job_target
-- The job a cancel takes, as it is before the cancel (jobdef.backends.cancels),
-- locked for the cancel's transaction: a completion, heartbeat or claim waits, and
-- this reads the state it left. Queued, or running (its open attempt is then
-- ended `cancelled`).
SELECT id, state, attempt, worker_id, started_at FROM {schema}.jobdef_jobs
WHERE id = %(job_id)s AND state IN ('queued', 'running')
FOR UPDATE;

-- name: cancel_job
-- It tells the job's waiters, if it has any (ended_notify); one row per job cancelled,
-- with the flow it is a step of (settled in the same transaction, jobdef.backends.flows).
-- The lease is cleared, so the running attempt's heartbeat, completion and failure
-- are refused by their fence; the worker id stays, naming whose attempt was cancelled.
WITH moved AS (
    UPDATE {schema}.jobdef_jobs
    SET state = 'cancelled', note = %(note)s, finished_at = %(now)s, updated_at = %(now)s,
        lease_until = NULL
    WHERE id = %(job_id)s AND state IN ('queued', 'running')
    RETURNING id, watched, flow_id
),
-- include: ended_notify
SELECT id, flow_id FROM moved WHERE (SELECT count(*) FROM ended) >= 0;

-- name: record_cancelled_attempt
-- The attempts row of a running attempt a cancel ended, in the cancel's transaction.
INSERT INTO {schema}.jobdef_attempts
    (job_id, attempt, worker_id, started_at, finished_at, outcome, error)
VALUES (%(job_id)s, %(attempt)s, %(worker_id)s, %(started_at)s, %(now)s, 'cancelled',
        %(error)s::jsonb);

-- fragment: requeue_target
-- Of the `named` jobs (each requeue query's own CTE), those a requeue moves: a
-- job whose idempotency key is active again is left alone (it would be a
-- duplicate), as is all but the newest of several sharing one key.
target AS (
    SELECT DISTINCT ON (j.job, coalesce(j.idempotency_key, j.id::text)) j.id
    FROM named
    JOIN {schema}.jobdef_jobs AS j ON j.id = named.id
    WHERE (j.idempotency_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM {schema}.jobdef_jobs AS a
        WHERE a.job = j.job AND a.idempotency_key = j.idempotency_key
          AND a.state IN ('queued', 'running')
    ))
    -- A job another runtime's adapter stored (worker_id `<runtime>/<task id>`; jobdef's
    -- own ids are host:pid:hex and a host name has no slash) goes back through its
    -- runtime, never to jobdef's worker.
    AND coalesce(j.worker_id, '') NOT LIKE '%%/%%'
    ORDER BY j.job, coalesce(j.idempotency_key, j.id::text), j.id DESC
)

-- fragment: requeue_move
-- Two CTEs: move the targets back to queued, attempts 0, history kept (`moved`),
-- and wake the workers of their queues (`notified`). The query then returns
-- one row per job moved, as SQLite's statement does.
moved AS (
    UPDATE {schema}.jobdef_jobs AS j
    SET state = 'queued', attempt = 0, run_after = %(now)s, finished_at = NULL,
        worker_id = NULL, lease_until = NULL, last_delay = NULL, note = NULL,
        result = NULL, updated_at = %(now)s
    FROM target
    WHERE j.id = target.id AND j.state = %(state)s
    RETURNING j.id, j.queue
),
notified AS (
    SELECT pg_notify(%(channel)s, q.queue) FROM (SELECT DISTINCT queue FROM moved) AS q
)

-- name: requeue_ids
-- Queue finished jobs again with attempts back to 0; history stays. SQLite keeps
-- the newest job per key with GROUP BY and max(id); DISTINCT ON does it here,
-- and the move notifies the workers.
WITH named AS (
    SELECT id FROM {schema}.jobdef_jobs
    WHERE state = %(state)s AND id = ANY (%(ids)s::bigint[])
),
-- include: requeue_target,
-- include: requeue_move
SELECT id FROM moved WHERE (SELECT count(*) FROM notified) >= 0;

-- name: requeue_job
-- The same for every job of one name in `state`.
WITH named AS (
    SELECT id FROM {schema}.jobdef_jobs
    WHERE state = %(state)s AND job = %(job)s
),
-- include: requeue_target,
-- include: requeue_move
SELECT id FROM moved WHERE (SELECT count(*) FROM notified) >= 0;

-- name: resolve_job
UPDATE {schema}.jobdef_jobs
SET state = 'resolved', note = %(note)s, finished_at = %(now)s, updated_at = %(now)s
WHERE id = %(job_id)s AND state = 'dead';

-- name: expired_leases
-- Ordered by id too, so leases that expired at the same time come in one fixed order.
SELECT * FROM {schema}.jobdef_jobs
WHERE state = 'running' AND lease_until < %(now)s
ORDER BY lease_until, id
LIMIT %(limit)s;

-- name: unhanded_claims
-- The running jobs of %(worker_id)s that its claims stamped %(started)s
-- (ClaimOptions.started_at): claims whose answer a worker that died never read
-- (jobdef.runtime.orphan), each then given back through release_job's fence. The
-- running rows only, through jobdef_jobs_running.
SELECT id, attempt FROM {schema}.jobdef_jobs
WHERE state = 'running' AND worker_id = %(worker_id)s
  AND started_at = ANY (%(started)s::float8[])
ORDER BY id;

-- name: prune_batch
-- One batch of one job's rows in one finished state past their retention, oldest
-- first, from the cursor %(after)s (the end time the previous batch reached, or
-- -Infinity): `deleted` rows, and the end time `reached`, which the next batch
-- starts from. One state per call, as SQLite's, so jobdef_jobs_finished (job, state,
-- finished_at) gives the order and the LIMIT stops the walk after the batch (with
-- several states the index gives no order: each batch read and sorted every row
-- still due, and a day's worth cost a batch tens of milliseconds). The cursor keeps
-- each batch from walking again the index entries of the rows the batches before
-- it deleted, which stay until VACUUM: a batch reads about as many rows as it
-- deletes however long the backlog. `>=`: rows that end at the same time as the
-- last one deleted are read again, not skipped.
-- Short transactions, and SKIP LOCKED: pruning never waits on, nor blocks, a claim
-- or an operator (a locked row is left for the next run). SQLite's selects the
-- batch's ids and its engine deletes the jobs and their attempts (delete_jobs,
-- delete_attempts); here one statement deletes both (no foreign key does it for
-- prune: migration 0014).
WITH doomed AS (
    SELECT id, finished_at FROM {schema}.jobdef_jobs
    WHERE job = %(job)s AND state = %(state)s
      AND finished_at IS NOT NULL
      AND finished_at >= %(after)s AND finished_at < %(before)s
      -- A step of a running flow is kept: a waiting step may still read its result.
      AND (flow_id IS NULL OR NOT EXISTS (
          SELECT 1 FROM {schema}.jobdef_flows AS f
          WHERE f.id = flow_id AND f.state = 'running'))
    ORDER BY finished_at
    LIMIT %(batch_size)s
    FOR UPDATE SKIP LOCKED
),
deleted AS (
    DELETE FROM {schema}.jobdef_jobs AS j USING doomed WHERE j.id = doomed.id
    RETURNING j.id, doomed.finished_at
),
attempts_deleted AS (
    DELETE FROM {schema}.jobdef_attempts AS a USING deleted WHERE a.job_id = deleted.id
)
SELECT count(*) AS deleted, max(finished_at) AS reached FROM deleted;

-- name: prune_count
-- Several states at once, as prune_batch (SQLite: one state per call).
SELECT count(*) FROM {schema}.jobdef_jobs
WHERE job = %(job)s AND state = ANY (%(states)s::text[])
  AND finished_at IS NOT NULL AND finished_at < %(before)s
  AND (flow_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM {schema}.jobdef_flows AS f WHERE f.id = flow_id AND f.state = 'running'));

-- name: expire_results
-- One batch of one job's stored results past its `result.retention`: the value is
-- cleared, the done row stays until its own retention. jobdef_jobs_results holds
-- only rows with a result, so a batch reads just the ones it clears; SKIP LOCKED,
-- as prune_batch: it never waits on, nor blocks, anyone.
WITH expired AS (
    SELECT id FROM {schema}.jobdef_jobs
    WHERE job = %(job)s AND result IS NOT NULL AND finished_at < %(before)s
      -- A step of a running flow keeps its result: a waiting step may still read it.
      AND (flow_id IS NULL OR NOT EXISTS (
          SELECT 1 FROM {schema}.jobdef_flows AS f
          WHERE f.id = flow_id AND f.state = 'running'))
    ORDER BY finished_at
    LIMIT %(batch_size)s
    FOR UPDATE SKIP LOCKED
)
UPDATE {schema}.jobdef_jobs AS j SET result = NULL FROM expired WHERE j.id = expired.id;

-- name: stats
SELECT job, queue, state, count(*) AS count,
       CASE WHEN state = 'queued' THEN greatest(0, %(now)s - min(run_after)) END AS oldest_age
FROM {schema}.jobdef_jobs
GROUP BY job, queue, state
ORDER BY job, queue, state;

-- name: get_job
SELECT * FROM {schema}.jobdef_jobs WHERE id = %(job_id)s;

-- name: job_by_receipt
-- The job that holds a receipt token (the caller then compares the token it found in
-- constant time): through the unique index of receipts, which leaves out running
-- rows (migration 0017), or among the running jobs, few, through their index. One
-- statement, one snapshot: a job that a claim or a completion moves meanwhile is
-- found in one branch, never in both or neither.
SELECT * FROM {schema}.jobdef_jobs WHERE receipt = %(receipt)s AND state <> 'running'
UNION ALL
SELECT * FROM {schema}.jobdef_jobs WHERE receipt = %(receipt)s AND state = 'running';

-- fragment: ended_or_gone
-- Of the waited jobs (`waited`: their ids in `w.id` and, where the job exists, its
-- row as `m`), those that ended, whole, and those that are gone (`id` NULL,
-- `waited` names it); none of those still queued or running.
SELECT w.id AS waited, m.*
FROM unnest(%(ids)s::bigint[]) AS w(id)
LEFT JOIN waited AS m ON m.id = w.id
WHERE m.id IS NULL OR m.state IN ('done', 'dead', 'resolved', 'cancelled');

-- name: ended_jobs
-- As SQLite's: the waiters' read of the jobs they wait for, one statement for all
-- of them, after a notification said some ended, or at the slow poll that makes
-- up for a notification lost with the listening session.
WITH waited AS (
    SELECT * FROM {schema}.jobdef_jobs WHERE id = ANY (%(ids)s::bigint[])
)
-- include: ended_or_gone

-- name: watch_jobs
-- PostgreSQL only: mark the waited jobs `watched`, so that the statement that ends
-- each notifies (ended_notify), and read those that ended already, in one
-- statement. The UPDATE reads each row as last committed after it locks it, so
-- either the move that ends a job came first (the job is returned here as ended)
-- or it comes after and sees `watched` (and notifies): no end falls between.
-- SQLite's waiters poll: they read ended_jobs.
WITH waited AS (
    UPDATE {schema}.jobdef_jobs SET watched = true
    WHERE id = ANY (%(ids)s::bigint[])
    RETURNING *
)
-- include: ended_or_gone

-- name: list_jobs
SELECT * FROM {schema}.jobdef_jobs
WHERE (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(job)s::text IS NULL OR job = %(job)s::text)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: job_attempts
SELECT job_id, attempt, worker_id, started_at, finished_at, outcome, error
FROM {schema}.jobdef_attempts
WHERE job_id = %(job_id)s
ORDER BY id;

-- name: processed_keys_exist
-- On the handler's own connection. to_regclass is SQLite's sqlite_master lookup.
SELECT to_regclass('{schema}.jobdef_processed_keys') IS NOT NULL;

-- name: create_processed_keys
-- On the handler's own connection, which need not be the job database, so the
-- schema may be missing there too. The time column is `created_at` here and
-- `processed_at` on SQLite: the two engines' tables were made that way.
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.jobdef_processed_keys (
    key        text PRIMARY KEY,
    job_id     bigint,
    created_at double precision NOT NULL
);

-- name: record_processed_key
INSERT INTO {schema}.jobdef_processed_keys (key, job_id, created_at)
VALUES (%(key)s, %(job_id)s, %(now)s)
ON CONFLICT (key) DO NOTHING;

-- name: outbox_claim
-- Lease due messages to one sender, so two senders never send the same one.
-- SQLite's is one UPDATE ... WHERE id IN (SELECT ... LIMIT); here the due rows
-- are locked with SKIP LOCKED first, as in claim_jobs.
WITH due AS (
    SELECT id FROM {schema}.jobdef_outbox
    WHERE delivered_at IS NULL AND next_at <= %(now)s
      AND (lease_until IS NULL OR lease_until <= %(now)s)
    ORDER BY next_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE {schema}.jobdef_outbox AS o
SET lease_until = %(lease_until)s
FROM due
WHERE o.id = due.id
RETURNING o.*;

-- name: outbox_delivered
UPDATE {schema}.jobdef_outbox SET delivered_at = %(now)s, lease_until = NULL
WHERE id = ANY (%(ids)s::bigint[]) AND delivered_at IS NULL;

-- name: outbox_failed
UPDATE {schema}.jobdef_outbox
SET attempts = attempts + 1, last_error = %(error)s, next_at = %(next_at)s, lease_until = NULL
WHERE id = %(id)s;

-- name: outbox_retry
UPDATE {schema}.jobdef_outbox SET next_at = %(now)s, lease_until = NULL
WHERE id = ANY (%(ids)s::bigint[]) AND delivered_at IS NULL;

-- name: outbox_pending
SELECT * FROM {schema}.jobdef_outbox WHERE delivered_at IS NULL ORDER BY id;

-- name: outbox_backlog
-- How many messages are not delivered yet, counted up to a limit only (the metrics
-- gauge's reading): a walk of the partial index of undelivered rows that stops
-- there, whatever the backlog.
SELECT count(*) AS backlog FROM (
    SELECT 1 FROM {schema}.jobdef_outbox WHERE delivered_at IS NULL LIMIT %(limit)s
) AS undelivered;

-- name: set_paused
-- Also stamps the row's updated_at, which only this engine's table has. A resume
-- wakes the listening workers (at commit), so that idle ones claim the queue's
-- backlog now, not at their next poll. One row either way: the change it made. A
-- name past NOTIFY's 8000-byte payload is never notified (nor could a job of it be:
-- an enqueue's notification names its queue), so such a queue still resumes.
WITH changed AS (
    INSERT INTO {schema}.jobdef_queues (queue, paused, updated_at)
    VALUES (%(queue)s, %(paused)s, %(now)s)
    ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at
    RETURNING queue, paused
)
SELECT queue, CASE WHEN NOT paused AND octet_length(queue) < 8000
                   THEN pg_notify(%(channel)s, queue) END
FROM changed;

-- name: queue_depths
-- Every queue that has a row (a paused one, a limited one) or active jobs, with
-- its pause state, in one statement, read only from the partial indexes of active
-- rows (the finished rows are never read), and no queue's backlog walked end to
-- end:
-- - `present`, the queues with queued jobs: a skip scan of jobdef_jobs_claim_queue,
--   one probe per queue (PostgreSQL has no skip scan of its own: a recursive one);
-- - `depths`, each of those queues' queued jobs counted there up to cap;
-- - `levels`, for the oldest wait, a skip scan over each queue's priorities:
--   within one (queue, priority) the index's first entry has the smallest
--   run_after, so the queue's oldest is the least of its priorities' first
--   entries. The queue's first entry, then the first entry below each priority
--   found, one probe each, gives each priority and its oldest run_after: one
--   probe per distinct priority in the queue, however many jobs it holds;
-- - the running jobs from jobdef_jobs_running.
-- The reads of jobdef_jobs_claim_queue say `queue >= q AND queue <= q` and order by
-- the queue first, where `queue = q` would do: PostgreSQL has no index hints, and
-- with an equality the queue drops out of the ORDER BY, which jobdef_jobs_claim
-- (the same order without the queue) then serves too, filtering on the queue: a
-- walk of the other queues' jobs, which the planner picks when the statistics say
-- one queue holds most rows (and, for the count, a walk of the table that the
-- LIMIT stops, finished rows and all). Ordered by the queue, only
-- jobdef_jobs_claim_queue gives the order, and the bounds still position the probe
-- (`>=` lets the btree go on to the priority's bound). Counting for `present`
-- only, not for every name, keeps the plan's estimated cost, so its JIT
-- compiling, small.
-- The engine's reader (the dashboard's overview) reads this same text (backends/reads.py
-- SHARED_QUERIES).
WITH RECURSIVE present(queue) AS (
    (SELECT j.queue FROM {schema}.jobdef_jobs AS j
     WHERE j.state = 'queued' ORDER BY j.queue LIMIT 1)
    UNION ALL
    SELECT (SELECT j.queue FROM {schema}.jobdef_jobs AS j
            WHERE j.state = 'queued' AND j.queue > p.queue ORDER BY j.queue LIMIT 1)
    FROM present AS p WHERE p.queue IS NOT NULL
),
levels(queue, priority, run_after) AS (
    SELECT p.queue, f.priority, f.run_after
    FROM present AS p
    CROSS JOIN LATERAL (
        SELECT j.priority, j.run_after FROM {schema}.jobdef_jobs AS j
        WHERE j.state = 'queued' AND j.queue >= p.queue AND j.queue <= p.queue
        ORDER BY j.queue, j.priority DESC, j.run_after LIMIT 1
    ) AS f
    WHERE p.queue IS NOT NULL
    UNION ALL
    SELECT l.queue, f.priority, f.run_after
    FROM levels AS l
    CROSS JOIN LATERAL (
        SELECT j.priority, j.run_after FROM {schema}.jobdef_jobs AS j
        WHERE j.state = 'queued' AND j.queue >= l.queue AND j.queue <= l.queue
          AND j.priority < l.priority
        ORDER BY j.queue, j.priority DESC, j.run_after LIMIT 1
    ) AS f
),
oldest AS (
    SELECT queue, min(run_after) AS run_after FROM levels GROUP BY queue
),
-- MATERIALIZED: counted once per queue. Inlined, the counts became a subquery the
-- planner may rescan: on a big table it joined them as the inner side of a nested
-- loop, and counted every queue once per queue (5 queues, 25 counts of up to cap).
depths AS MATERIALIZED (
    SELECT p.queue,
           (SELECT count(*) FROM (SELECT 1 FROM {schema}.jobdef_jobs AS j
                                  WHERE j.state = 'queued'
                                    AND j.queue >= p.queue AND j.queue <= p.queue
                                  ORDER BY j.queue, j.priority DESC, j.run_after, j.id
                                  LIMIT %(cap)s) AS c) AS queued
    FROM present AS p WHERE p.queue IS NOT NULL
),
names AS (
    SELECT queue FROM {schema}.jobdef_queues
    UNION SELECT queue FROM present WHERE queue IS NOT NULL
    UNION SELECT queue FROM {schema}.jobdef_jobs WHERE state = 'running'
)
SELECT n.queue,
       coalesce(q.paused, false) AS paused,
       coalesce(c.queued, 0) AS queued,
       (SELECT count(*) FROM {schema}.jobdef_jobs AS j
        WHERE j.state = 'running' AND j.queue = n.queue) AS running,
       -- NULL, as on SQLite, when nothing is queued (no row in oldest): greatest()
       -- would skip the NULL.
       CASE WHEN o.run_after IS NOT NULL THEN greatest(0, %(now)s - o.run_after) END
           AS oldest_queued_age
FROM names AS n
LEFT JOIN {schema}.jobdef_queues AS q ON q.queue = n.queue
LEFT JOIN depths AS c ON c.queue = n.queue
LEFT JOIN oldest AS o ON o.queue = n.queue
ORDER BY n.queue;

-- name: schema_exists
-- PostgreSQL only: the tables live in a schema of their own.
SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = %(schema_name)s);

-- name: create_schema
-- PostgreSQL only.
CREATE SCHEMA IF NOT EXISTS {schema};

-- name: create_schema_version
-- PostgreSQL only (SQLite's migrations create the table themselves).
CREATE TABLE IF NOT EXISTS {schema}.jobdef_schema_version (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: schema_version
-- The newest migration applied; fails when the table is missing.
SELECT coalesce(max(version), 0) FROM {schema}.jobdef_schema_version;

-- name: store_id
-- The store's own id (migration 0008): the same whatever URL reaches the schema.
SELECT id FROM {schema}.jobdef_store ORDER BY created_at, id LIMIT 1;

-- name: record_migration
-- applied_at is the server's timestamptz default (SQLite stores the engine's :now).
INSERT INTO {schema}.jobdef_schema_version (version, name) VALUES (%(version)s, %(name)s);

-- name: advisory_xact_lock
-- PostgreSQL only, as the two below: advisory locks between engines on many
-- hosts. This one serializes migrations (SQLite's write lock does that there).
SELECT pg_advisory_xact_lock(%(key)s);

-- name: take_lease
-- PostgreSQL only, as give_back_lease: the maintenance lease (see listener.py).
-- Renew the lease `name` for `holder`, or take it over once it has lapsed; no
-- row when another engine holds it. A renewal keeps the generation that the
-- holder names (`generation`, NULL when it holds none); a takeover adds one, so
-- a holder frozen past its lease finds its generation gone. Times are the
-- server's (clock_timestamp(): now() would be the start of the transaction),
-- so hosts whose clocks disagree still agree on when the lease lapses.
-- One row: `generation`, NULL when another engine holds the lease; `previous`, the
-- holder before this statement (its snapshot's); `lapses_in`, the seconds until the
-- lease this statement found lapses, by the server's clock (NULL: none found), which
-- an engine refused waits before it asks again (listener.py).
-- While another engine holds the lease and it has not lapsed (by the snapshot),
-- nothing is inserted: ON CONFLICT DO UPDATE locks the row even when its WHERE
-- refuses the update, and engines that do not hold the lease ask too, so each
-- would wait for the last one's lock to commit, a queue of the fleet's WAL flushes
-- on one row.
WITH prior AS (
    SELECT holder, expires_at FROM {schema}.jobdef_leases WHERE name = %(name)s
),
taken AS (
    INSERT INTO {schema}.jobdef_leases AS l (name, holder, generation, expires_at)
    SELECT %(name)s, %(holder)s, 1, extract(epoch FROM clock_timestamp()) + %(seconds)s
    WHERE NOT EXISTS (
        SELECT 1 FROM prior
        WHERE prior.holder <> %(holder)s
          AND prior.expires_at >= extract(epoch FROM clock_timestamp())
    )
    ON CONFLICT (name) DO UPDATE
    SET holder = excluded.holder,
        generation = CASE
            WHEN l.holder = excluded.holder AND l.generation = %(generation)s::bigint
            THEN l.generation ELSE l.generation + 1 END,
        expires_at = excluded.expires_at
    WHERE (l.holder = excluded.holder AND l.generation = %(generation)s::bigint)
       OR l.expires_at < extract(epoch FROM clock_timestamp())
    RETURNING l.generation
)
SELECT (SELECT generation FROM taken) AS generation,
       (SELECT holder FROM prior) AS previous,
       ((SELECT expires_at FROM prior) - extract(epoch FROM clock_timestamp()))::float8
           AS lapses_in;

-- name: give_back_lease
-- A holder that stops lets the next engine take its lease at once, and says so on
-- the schema's channel (`notice`, listener.LEASE_FREED): the engines waiting for the
-- lease to lapse ask again at their next round.
WITH given AS (
    UPDATE {schema}.jobdef_leases SET expires_at = 0
    WHERE name = %(name)s AND holder = %(holder)s AND generation = %(generation)s
    RETURNING name
)
SELECT pg_notify(%(channel)s, %(notice)s) FROM given;

-- name: server_time
-- PostgreSQL only: the engine's clock is the server's (see clock.py), read now and
-- then; clock_timestamp(), not now(), which is the start of the transaction.
SELECT extract(epoch FROM clock_timestamp())::float8;

-- name: register_worker
-- A worker's row at its start (jobdef.backends.workers); a restart under the same id
-- replaces it. Differs from SQLite's: the channel on which enqueues tell the worker
-- its turns (wake_workers).
INSERT INTO {schema}.jobdef_workers (id, host, pid, queues, concurrency, lease_seconds,
                                     version, started_at, last_beat, wake_channel)
VALUES (%(id)s, %(host)s, %(pid)s, %(queues)s, %(concurrency)s, %(lease_seconds)s,
        %(version)s, %(now)s, %(now)s, %(wake_channel)s)
ON CONFLICT (id) DO UPDATE SET
    host = excluded.host, pid = excluded.pid, queues = excluded.queues,
    concurrency = excluded.concurrency, lease_seconds = excluded.lease_seconds,
    version = excluded.version, started_at = excluded.started_at,
    last_beat = excluded.last_beat, wake_channel = excluded.wake_channel;

-- name: beat_worker
-- Every lease/3 while the worker lives: one row by its primary key.
UPDATE {schema}.jobdef_workers SET last_beat = %(now)s WHERE id = %(id)s;

-- name: unregister_worker
DELETE FROM {schema}.jobdef_workers WHERE id = %(id)s;

-- name: list_workers
SELECT id, host, pid, queues, concurrency, lease_seconds, version, started_at, last_beat,
       wake_channel
FROM {schema}.jobdef_workers ORDER BY started_at, id;

-- name: running_by_worker
-- The running jobs and their workers; SQLite's names the partial index it reads.
SELECT id, worker_id FROM {schema}.jobdef_jobs
WHERE state = 'running' AND worker_id IS NOT NULL;

-- name: prune_workers
-- Rows of workers that stopped beating long ago (they died without deleting theirs).
DELETE FROM {schema}.jobdef_workers WHERE last_beat < %(before)s;

-- name: insert_dead_elsewhere
-- As SQLite's: a job that died in another runtime, stored dead; a repeated report stores
-- nothing.
INSERT INTO {schema}.jobdef_jobs (job, queue, priority, args, state, attempt, max_attempts,
                  idempotency_key, run_after, created_at, updated_at, started_at,
                  finished_at, worker_id, last_error, last_delay)
SELECT %(job)s, %(queue)s, %(priority)s, %(args)s::jsonb, 'dead', %(attempt)s,
       %(max_attempts)s, %(key)s, %(created_at)s, %(created_at)s, %(now)s, %(started_at)s,
       %(now)s, %(worker_id)s, %(error)s::jsonb, %(last_delay)s
WHERE NOT EXISTS (
    SELECT 1 FROM {schema}.jobdef_jobs
    WHERE job = %(job)s AND worker_id = %(worker_id)s AND created_at = %(created_at)s
)
RETURNING id;

-- name: find_dead_elsewhere
SELECT * FROM {schema}.jobdef_jobs
WHERE job = %(job)s AND worker_id = %(worker_id)s AND created_at = %(created_at)s
ORDER BY id LIMIT 1;

-- name: insert_attempt_elsewhere
INSERT INTO {schema}.jobdef_attempts
    (job_id, attempt, worker_id, started_at, finished_at, outcome, error)
SELECT %(job_id)s, %(attempt)s, %(worker_id)s, %(started_at)s, %(finished_at)s, %(outcome)s,
       %(error)s::jsonb
WHERE NOT EXISTS (
    SELECT 1 FROM {schema}.jobdef_attempts WHERE job_id = %(job_id)s AND attempt = %(attempt)s
)
RETURNING id;

-- name: insert_outbox_elsewhere
INSERT INTO {schema}.jobdef_outbox (message_id, channel, event, job, payload, next_at, created_at)
VALUES (%(message_id)s, %(channel_name)s, %(event)s, %(job)s, %(payload)s::jsonb, %(now)s,
        %(now)s)
ON CONFLICT (message_id) DO NOTHING
RETURNING id;

-- name: dead_count
-- One job's dead rows, counted up to :cap (the dead-jobs gauge and the dashboard).
SELECT count(*) AS count FROM (
    SELECT 1 FROM {schema}.jobdef_jobs
    WHERE job = %(job)s AND state = 'dead' AND finished_at IS NOT NULL LIMIT %(cap)s
) AS d;

-- Flows (jobdef.backends.flows): each runs inside a transaction the engine holds.

-- name: flow_lock_key
-- Two starts of a flow with one key wait for each other (the lock is the
-- transaction's), so the second sees the first's row and merges into it.
SELECT pg_advisory_xact_lock(%(lock)s) IS NULL AS locked;

-- name: flow_find_duplicate
-- The flow a start with this key merges into: a running one, or one done since :since.
SELECT id, receipt FROM {schema}.jobdef_flows
WHERE name = %(name)s AND idempotency_key = %(key)s
  AND (state = 'running'
       OR (state = 'done' AND %(since)s::double precision IS NOT NULL
           AND finished_at >= %(since)s::double precision))
ORDER BY id DESC LIMIT 1;

-- name: flow_insert
INSERT INTO {schema}.jobdef_flows (name, receipt, idempotency_key, args, graph, state,
                                   deadline, created_at)
VALUES (%(name)s, %(receipt)s, %(key)s, %(args)s::jsonb, %(graph)s::jsonb, 'running',
        %(deadline)s, %(now)s)
RETURNING id;

-- name: flow_insert_steps
-- Every step of a flow in one statement, from a JSON array (flows.start); wakes the
-- idle workers of the queues of the steps queued at once.
WITH inserted AS (
    INSERT INTO {schema}.jobdef_jobs (job, queue, priority, args, state, attempt,
                                      max_attempts, run_after, created_at, updated_at,
                                      receipt, flow_id, step, idempotency_key)
    SELECT s.job, s.queue, s.priority, s.args, s.state, 0, s.max_attempts,
           %(now)s, %(now)s, %(now)s, s.receipt, %(flow_id)s, s.step,
           -- A queued step's key, unless an active job of its name holds it (the
           -- unique index of active keys): the step runs all the same.
           CASE WHEN s.key IS NOT NULL AND NOT EXISTS (
               SELECT 1 FROM {schema}.jobdef_jobs AS a
               WHERE a.job = s.job AND a.idempotency_key = s.key
                 AND a.state IN ('queued', 'running')) THEN s.key END
    FROM jsonb_to_recordset(%(steps)s::jsonb)
        AS s(job text, queue text, priority int, args jsonb, state text,
             max_attempts int, receipt text, step text, key text)
    RETURNING id, queue, state
),
notified AS (
    SELECT pg_notify(%(channel)s, queue) FROM (
        SELECT DISTINCT queue FROM inserted WHERE state = 'queued') AS q
)
SELECT count(*) AS steps FROM inserted WHERE (SELECT count(*) FROM notified) >= 0;

-- name: flow_lock
-- The flow's row, locked for the transaction: the ends of two of its steps settle
-- it one after the other, the second reading the first's (READ COMMITTED).
SELECT id, name, receipt, state, args, graph, deadline, created_at, finished_at, note
FROM {schema}.jobdef_flows WHERE id = %(flow_id)s
FOR UPDATE;

-- name: flow_steps
SELECT id, step, state, result, finished_at
FROM {schema}.jobdef_jobs WHERE flow_id = %(flow_id)s;

-- name: flow_release_step
WITH moved AS (
    UPDATE {schema}.jobdef_jobs
    SET state = 'queued', args = %(args)s::jsonb, run_after = %(now)s, updated_at = %(now)s,
        -- Its key, unless an active job of its name holds it (the unique index of
        -- active keys): the step runs all the same.
        idempotency_key = CASE WHEN %(key)s::text IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM {schema}.jobdef_jobs AS a
            WHERE a.job = %(job)s AND a.idempotency_key = %(key)s::text
              AND a.state IN ('queued', 'running')) THEN %(key)s::text END
    WHERE id = %(job_id)s AND state = 'waiting'
    RETURNING queue
)
SELECT pg_notify(%(channel)s, queue) FROM moved;

-- name: flow_cancel_step
UPDATE {schema}.jobdef_jobs
SET state = 'cancelled', note = %(note)s, finished_at = %(now)s, updated_at = %(now)s
WHERE id = %(job_id)s AND state = 'waiting';

-- name: flow_end
UPDATE {schema}.jobdef_flows SET state = %(state)s, finished_at = %(now)s
WHERE id = %(flow_id)s;

-- name: flow_mark_cancelled
UPDATE {schema}.jobdef_flows SET note = %(note)s WHERE id = %(flow_id)s AND note IS NULL;

-- name: flow_cancel_targets
-- A cancelled flow's steps that may still end, as they are before the cancel (as
-- cancel_job_target), locked in id order before the flow's row: a step's end
-- locks its row and then the flow's, so taking them in this order too leaves no
-- cycle to wait in.
SELECT id, state, attempt, worker_id, started_at FROM {schema}.jobdef_jobs
WHERE flow_id = %(flow_id)s AND state IN ('queued', 'running') ORDER BY id
FOR UPDATE;

-- name: flow_cancel_steps
-- Waiting, queued and running steps; a running one's lease is cleared (cancel_job).
-- It tells the steps' waiters, if they have any (ended_notify).
WITH moved AS (
    UPDATE {schema}.jobdef_jobs
    SET state = 'cancelled', note = %(note)s, finished_at = %(now)s, updated_at = %(now)s,
        lease_until = NULL
    WHERE flow_id = %(flow_id)s AND state IN ('waiting', 'queued', 'running')
    RETURNING id, watched
),
-- include: ended_notify
SELECT count(*) FROM ended;

-- name: flow_cancel_orphans
-- Waiting steps whose flow row is gone.
UPDATE {schema}.jobdef_jobs AS j
SET state = 'cancelled', note = %(note)s, finished_at = %(now)s, updated_at = %(now)s
WHERE j.flow_id IS NOT NULL AND j.state = 'waiting'
  AND NOT EXISTS (SELECT 1 FROM {schema}.jobdef_flows AS f WHERE f.id = j.flow_id)
RETURNING j.id;

-- name: flow_past_deadline
SELECT id FROM {schema}.jobdef_flows
WHERE state = 'running' AND deadline < %(now)s ORDER BY deadline LIMIT %(limit)s;

-- name: flow_stuck
-- Running flows with no step queued or running: no step's end will settle them.
SELECT f.id FROM {schema}.jobdef_flows AS f
WHERE f.state = 'running'
  AND NOT EXISTS (SELECT 1 FROM {schema}.jobdef_jobs AS j
                  WHERE j.flow_id = f.id AND j.state IN ('queued', 'running'))
ORDER BY f.id LIMIT %(limit)s;

-- name: flow_get
SELECT id, name, receipt, state, args, graph, deadline, created_at, finished_at, note
FROM {schema}.jobdef_flows WHERE id = %(flow_id)s;

-- name: flow_by_receipt
SELECT id, name, receipt, state, args, graph, deadline, created_at, finished_at, note
FROM {schema}.jobdef_flows WHERE receipt = %(receipt)s;

-- name: flow_list
SELECT id, name, receipt, state, args, graph, deadline, created_at, finished_at, note
FROM {schema}.jobdef_flows
WHERE id < %(before)s AND id >= %(floor)s
  AND (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(name)s::text IS NULL OR name = %(name)s::text)
ORDER BY id DESC LIMIT %(limit)s;

-- name: flow_counts
SELECT name, state, count(*) AS count FROM {schema}.jobdef_flows
GROUP BY name, state ORDER BY name, state;


-- name: prune_flows_batch
-- One batch of ended flows none of whose steps' rows remain, after the cursor
-- %(after)s (the walk of one prune reads each ended flow once). jobdef_flows_ended
-- holds only ended flows; each one's steps are probed through jobdef_jobs_flow. An
-- ended flow gets no new step, so a flow seen here with no step has none for good.
-- SKIP LOCKED, as prune_batch: it never waits on, nor blocks, anyone.
WITH doomed AS (
    SELECT f.id FROM {schema}.jobdef_flows AS f
    WHERE f.state <> 'running' AND f.id > %(after)s
      AND NOT EXISTS (SELECT 1 FROM {schema}.jobdef_jobs AS j WHERE j.flow_id = f.id)
    ORDER BY f.id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
DELETE FROM {schema}.jobdef_flows AS f USING doomed WHERE f.id = doomed.id
RETURNING f.id;

-- name: prune_flows_count
-- As prune_flows_batch, counted (prune --dry-run).
SELECT count(*) AS count FROM {schema}.jobdef_flows AS f
WHERE f.state <> 'running'
  AND NOT EXISTS (SELECT 1 FROM {schema}.jobdef_jobs AS j WHERE j.flow_id = f.id);
