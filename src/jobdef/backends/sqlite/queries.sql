-- Named queries of the SQLite engine, with the names and parameters of the
-- PostgreSQL engine's (postgres/queries.sql) wherever the two do the same thing;
-- the names only one engine has are listed, with why, in
-- tests/backends/test_queries.py. Parameters are named (`:now`); all times are
-- epoch seconds from the engine's clock.
--
-- How this file differs from PostgreSQL's throughout, so the blocks below do not
-- repeat it:
-- - Lists are JSON arrays in one text parameter, read with `json_each` (sqlite3
--   has no array type); PostgreSQL passes arrays and reads them with `unnest`.
--   A list of rows is one array of arrays (complete_jobs' :leases), where
--   PostgreSQL takes one array per column.
-- - args, progress, errors and payloads are JSON in TEXT (PostgreSQL: `jsonb`),
--   the text both engines write (jobdef.backends.rows.dump_json).
-- - `INDEXED BY` pins the index a query walks (claim, reclaim, prune, outbox),
--   so its cost does not rest on the planner's choice; PostgreSQL has no such
--   clause and its sessions turn bitmap scans off instead (session_settings).
-- - `max(a, b)` is PostgreSQL's `greatest(a, b)`; booleans are 0 and 1.
-- - One writer at a time (`BEGIN IMMEDIATE`), so nothing takes row locks (no
--   `SKIP LOCKED`), and a batch runs as one statement per row inside one
--   transaction: in-process statements cost no round trip, the commit does.
-- - No UPDATE or INSERT inside a CTE: where PostgreSQL writes the attempts row
--   or the outbox messages in the statement that moves a job, this engine runs
--   a second statement in the same transaction. A fenced move (retry_job,
--   bury_job, release_job) returns the attempt's started_at for record_attempt,
--   complete_jobs the ids of the jobs it finished, whose rows record_done_attempts
--   reads; then insert_outbox, one row per message (the engine's _fenced_move and
--   _complete, under jobdef.backends.transitions).
-- - Workers poll: no statement notifies them (PostgreSQL's `pg_notify`).
--
-- A fragment is one or more whole CTEs, or a whole statement; a query includes
-- it with `-- include: NAME` (`-- include: NAME,` when another CTE follows).

-- name: schema_tables
-- Whether this database has jobdef's version table (1) or not (0). Read without
-- writing anything, so a read command on a database without jobdef tables
-- leaves it as it was.
SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'jobdef_schema_version';

-- name: schema_version
-- The newest migration applied.
SELECT coalesce(max(version), 0) FROM jobdef_schema_version;

-- name: store_id
-- The store's own id (migration 0008): the same whatever URL reaches the file.
SELECT id FROM jobdef_store ORDER BY created_at, id LIMIT 1;

-- name: record_migration
-- applied_at is the engine's :now, as every time here (PostgreSQL's is the
-- server's timestamptz default).
INSERT INTO jobdef_schema_version (version, name, applied_at) VALUES (:version, :name, :now);

-- name: find_duplicate
-- An active job with the same key, or (with a window) one that finished done recently.
-- One key per call, before that job is inserted; PostgreSQL answers a whole
-- batch in one statement, each answer tagged with the job's ordinal.
SELECT id, receipt FROM jobdef_jobs
WHERE job = :job AND idempotency_key = :key
  AND (state IN ('queued', 'running')
       OR (:window IS NOT NULL AND state = 'done' AND finished_at >= :now - :window))
ORDER BY id DESC
LIMIT 1;

-- name: find_slot
-- The job that holds a cron slot, and its receipt (NULL when the job was pruned
-- since), asked before inserting (one writer: nothing can take the slot in
-- between); PostgreSQL inserts first (insert_slot) and asks this for the slots
-- its batch lost.
SELECT s.job_id, j.receipt
FROM jobdef_slots AS s LEFT JOIN jobdef_jobs AS j ON j.id = s.job_id
WHERE s.job = :job AND s.slot = :slot;

-- name: assign_receipt
-- A receipt for a job that has none (enqueued before receipts) when an enqueue
-- merges into it; the one it has otherwise. No row: the job is gone. One job per
-- call; PostgreSQL's takes the batch's.
UPDATE jobdef_jobs SET receipt = coalesce(receipt, :receipt) WHERE id = :job_id
RETURNING id, receipt;

-- name: insert_slot
-- One slot, free as find_slot said; PostgreSQL's inserts a batch with
-- ON CONFLICT DO NOTHING, since concurrent enqueues of one slot race there.
INSERT INTO jobdef_slots (job, slot, job_id) VALUES (:job, :slot, :job_id);

-- name: last_slot
-- The newest slot ever stored for a job; the primary key (job, slot) serves it.
SELECT max(slot) AS slot FROM jobdef_slots WHERE job = :job;

-- name: insert_job
-- Every job, one per call, key and slot included (find_duplicate and find_slot
-- ran first); PostgreSQL's takes only a job without them and notifies, and a
-- batch goes through its insert_jobs.
INSERT INTO jobdef_jobs (job, queue, priority, args, state, max_attempts, idempotency_key,
                  run_after, created_at, updated_at, slot, receipt)
VALUES (:job, :queue, :priority, :args, 'queued', :max_attempts, :key,
        :run_after, :now, :now, :slot, :receipt);

-- name: claim_jobs
-- One statement: the runnable jobs in claim order, leased to the worker, for a
-- claim over every queue while none is paused (the engine reads the others queue
-- by queue: queues_with_queued, queue_candidates, claim_ids). The inner SELECT
-- walks the jobdef_jobs_claim partial index and stops after :limit rows.
-- The attempt starts on the job row (started_at); its attempts row is written
-- when it ends. PostgreSQL's locks what it picks with SKIP LOCKED, in two
-- CTEs, so that concurrent workers never wait on each other.
UPDATE jobdef_jobs
SET state = 'running', attempt = attempt + 1, worker_id = :worker_id,
    started_at = :now, lease_until = :lease_until, updated_at = :now
WHERE id IN (
    SELECT id FROM jobdef_jobs INDEXED BY jobdef_jobs_claim
    WHERE state = 'queued' AND run_after <= :now
    ORDER BY priority DESC, run_after, id
    LIMIT :limit
)
RETURNING *;

-- fragment: queued_queues
-- `present`, the queues that have queued jobs (and a last NULL row that ends the
-- recursion): a skip scan of jobdef_jobs_claim_queue, one index probe per queue
-- however many jobs each holds. A recursive CTE: the query says WITH RECURSIVE.
present AS (
    SELECT (SELECT queue FROM jobdef_jobs INDEXED BY jobdef_jobs_claim_queue
            WHERE state = 'queued' ORDER BY queue LIMIT 1) AS queue
    UNION ALL
    SELECT (SELECT j.queue FROM jobdef_jobs AS j INDEXED BY jobdef_jobs_claim_queue
            WHERE j.state = 'queued' AND j.queue > present.queue ORDER BY j.queue LIMIT 1)
    FROM present WHERE present.queue IS NOT NULL
)

-- name: queues_with_queued
-- The queues that have queued jobs.
WITH RECURSIVE
-- include: queued_queues
SELECT queue FROM present WHERE queue IS NOT NULL;

-- name: queue_candidates
-- One queue's runnable jobs in claim order, without taking them: the claim under
-- queue limits merges these per-queue picks.
SELECT id, queue, priority, run_after FROM jobdef_jobs INDEXED BY jobdef_jobs_claim_queue
WHERE state = 'queued' AND queue = :queue AND run_after <= :now
ORDER BY priority DESC, run_after, id
LIMIT :limit;

-- name: claim_ids
UPDATE jobdef_jobs
SET state = 'running', attempt = attempt + 1, worker_id = :worker_id,
    started_at = :now, lease_until = :lease_until, updated_at = :now
WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'queued'
RETURNING *;

-- name: running_per_queue
SELECT queue, count(*) FROM jobdef_jobs INDEXED BY jobdef_jobs_running
WHERE state = 'running' AND queue IN (SELECT value FROM json_each(:queues))
GROUP BY queue;

-- name: queue_buckets
-- The token buckets of rate-limited queues (a queue without a row has a full bucket).
SELECT queue, tokens, tokens_at FROM jobdef_queues
WHERE queue IN (SELECT value FROM json_each(:queues));

-- name: spend_tokens
INSERT INTO jobdef_queues (queue, tokens, tokens_at) VALUES (:queue, :tokens, :now)
ON CONFLICT (queue) DO UPDATE SET tokens = excluded.tokens, tokens_at = excluded.tokens_at;

-- name: record_attempt
-- The one write of an attempt, when it ends: after the fenced move of its job.
INSERT INTO jobdef_attempts (job_id, attempt, worker_id, started_at, finished_at, outcome, error)
VALUES (:job_id, :attempt, :worker_id, :started_at, :now, :outcome, :error);

-- name: heartbeat
UPDATE jobdef_jobs
SET lease_until = :lease_until, updated_at = :now, progress = coalesce(:progress, progress)
WHERE id = :job_id AND attempt = :attempt AND worker_id = :worker_id AND state = 'running';

-- name: complete_jobs
-- Group commit: every lease one worker (:worker_id) holds in a turn, in one
-- statement (one more for a second lease of a job already in it: see the engine's
-- _fence_statements). :fences is a JSON object keyed by job id: the lease's
-- attempt, or [attempt, result] when the handler returned something (its JSON
-- text, checked by the worker's child; json_extract gives that text back as it
-- is). The fence is the same as heartbeat's. An object read by json_each costs no json_extract
-- for a lease without a result: four per lease (an array of [id, attempt,
-- worker, result] each) were a quarter of the statement's time.
UPDATE jobdef_jobs
SET state = 'done', finished_at = :now, updated_at = :now, lease_until = NULL,
    result = lease.result
FROM (SELECT key AS id,
             CASE type WHEN 'integer' THEN value ELSE json_extract(value, '$[0]') END AS attempt,
             CASE type WHEN 'integer' THEN NULL ELSE json_extract(value, '$[1]') END AS result
      FROM json_each(:fences)) AS lease
WHERE jobdef_jobs.id = lease.id AND jobdef_jobs.attempt = lease.attempt
  AND jobdef_jobs.worker_id = :worker_id AND jobdef_jobs.state = 'running'
RETURNING jobdef_jobs.id;

-- name: record_done_attempts
-- The attempts rows of the jobs complete_jobs finished (:ids, a JSON array of their
-- ids), in one statement, read from the rows it just wrote: attempt, worker and
-- start are the finished attempt's. Only the ids make the round trip through
-- Python and JSON.
INSERT INTO jobdef_attempts (job_id, attempt, worker_id, started_at, finished_at, outcome)
SELECT id, attempt, worker_id, started_at, :now, 'done' FROM jobdef_jobs
WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'done' AND finished_at = :now;

-- name: retry_job
-- Back to the queue after a failed attempt; last_error and last_delay feed the
-- next backoff. A reclaim (outcome `reclaimed`) also needs the lease to have
-- expired, checked in this statement: a heartbeat that renewed it after the
-- reclaimer read it keeps the job.
UPDATE jobdef_jobs
SET state = 'queued', run_after = :run_after, last_delay = :delay, updated_at = :now,
    worker_id = NULL, lease_until = NULL, last_error = :error
WHERE id = :job_id AND attempt = :attempt AND worker_id = :worker_id AND state = 'running'
  AND (:outcome <> 'reclaimed' OR lease_until < :now)
RETURNING started_at;

-- name: bury_job
-- A reclaim needs the lease expired, as retry_job.
UPDATE jobdef_jobs
SET state = 'dead', finished_at = :now, updated_at = :now, lease_until = NULL,
    last_error = :error
WHERE id = :job_id AND attempt = :attempt AND worker_id = :worker_id AND state = 'running'
  AND (:outcome <> 'reclaimed' OR lease_until < :now)
RETURNING started_at;

-- name: release_job
-- Shutdown: back to the queue at its old place, the attempt not counted.
UPDATE jobdef_jobs
SET state = 'queued', attempt = attempt - 1, updated_at = :now,
    worker_id = NULL, lease_until = NULL
WHERE id = :job_id AND attempt = :attempt AND worker_id = :worker_id AND state = 'running'
RETURNING started_at;

-- name: cancel_job_target
-- The job a cancel takes, as it is before the cancel (jobdef.backends.cancels):
-- queued, or running (its open attempt is then ended `cancelled`). PostgreSQL's
-- locks the row; the write lock serves here.
SELECT id, state, attempt, worker_id, started_at FROM jobdef_jobs
WHERE id = :job_id AND state IN ('queued', 'running');

-- name: cancel_job
-- One row per job cancelled, with the flow it is a step of (settled in the same
-- transaction, jobdef.backends.flows). The lease is cleared, so the running
-- attempt's heartbeat, completion and failure are refused by their fence; the
-- worker id stays, naming whose attempt was cancelled.
UPDATE jobdef_jobs
SET state = 'cancelled', note = :note, finished_at = :now, updated_at = :now,
    lease_until = NULL
WHERE id = :job_id AND state IN ('queued', 'running')
RETURNING id, flow_id;

-- name: record_cancelled_attempt
-- The attempts row of a running attempt a cancel ended, in the cancel's transaction.
INSERT INTO jobdef_attempts (job_id, attempt, worker_id, started_at, finished_at, outcome, error)
VALUES (:job_id, :attempt, :worker_id, :started_at, :now, 'cancelled', :error);

-- fragment: requeue_target
-- Of the `named` jobs (each requeue query's own CTE), those a requeue moves: a
-- job whose idempotency key is active again is left alone (it would be a
-- duplicate), as is all but the newest of several sharing one key.
-- PostgreSQL's keeps the newest with DISTINCT ON; here GROUP BY and max(id).
target AS (
    SELECT max(j.id) AS id
    FROM named
    JOIN jobdef_jobs AS j ON j.id = named.id
    WHERE (j.idempotency_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM jobdef_jobs AS a
        WHERE a.job = j.job AND a.idempotency_key = j.idempotency_key
          AND a.state IN ('queued', 'running')
    ))
    -- A job another runtime's adapter stored (worker_id `<runtime>/<task id>`; jobdef's
    -- own ids are host:pid:hex and a host name has no slash) goes back through its
    -- runtime, never to jobdef's worker.
    AND coalesce(j.worker_id, '') NOT LIKE '%/%'
    GROUP BY j.job, coalesce(j.idempotency_key, j.id)
)

-- fragment: requeue_move
-- Move the targets back to queued, attempts 0, history kept; one row per job
-- moved. A whole statement here, where PostgreSQL's is two CTEs: SQLite has no
-- UPDATE inside a CTE, and its workers poll, so there is nobody to notify.
UPDATE jobdef_jobs
SET state = 'queued', attempt = 0, run_after = :now, updated_at = :now,
    finished_at = NULL, worker_id = NULL, lease_until = NULL, last_delay = NULL, note = NULL,
    result = NULL
WHERE state = :state AND id IN (SELECT id FROM target)
RETURNING id;

-- name: requeue_ids
-- Queue finished jobs again with attempts back to 0; history stays.
WITH named AS (
    SELECT id FROM jobdef_jobs
    WHERE state = :state AND id IN (SELECT value FROM json_each(:ids))
),
-- include: requeue_target
-- include: requeue_move

-- name: requeue_job
-- The same for every job of one name in `state`.
WITH named AS (
    SELECT id FROM jobdef_jobs
    WHERE state = :state AND job = :job
),
-- include: requeue_target
-- include: requeue_move

-- name: resolve_job
UPDATE jobdef_jobs SET state = 'resolved', note = :note, finished_at = :now, updated_at = :now
WHERE id = :job_id AND state = 'dead';

-- name: expired_leases
-- Ordered by id too, so leases that expired at the same time come in one fixed
-- order (the index gives the lease_until order; only the ties are sorted).
SELECT * FROM jobdef_jobs INDEXED BY jobdef_jobs_running
WHERE state = 'running' AND lease_until < :now
ORDER BY lease_until, id
LIMIT :limit;

-- name: unhanded_claims
-- The running jobs of :worker_id that its claims stamped :started
-- (ClaimOptions.started_at): claims whose answer a worker that died never read
-- (jobdef.runtime.orphan), each then given back through release_job's fence.
SELECT id, attempt FROM jobdef_jobs INDEXED BY jobdef_jobs_running
WHERE state = 'running' AND worker_id = :worker_id
  AND started_at IN (SELECT value FROM json_each(:started))
ORDER BY id;

-- name: prune_batch
-- Ids of one job's rows in one final state that finished before :before. One
-- state per call, so jobdef_jobs_finished (job, state, finished_at) serves it
-- (`finished_at < :before` implies its condition, finished_at IS NOT NULL);
-- the engine then deletes the jobs and their attempts (delete_jobs,
-- delete_attempts): DELETE ... LIMIT needs a compile option that a SQLite
-- build need not have, and these tables have no ON DELETE CASCADE.
-- PostgreSQL's deletes a batch of several states in one statement.
SELECT id FROM jobdef_jobs INDEXED BY jobdef_jobs_finished
WHERE job = :job AND state = :state AND finished_at < :before
  -- A step of a running flow is kept: a waiting step may still read its result.
  AND (flow_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM jobdef_flows AS f WHERE f.id = flow_id AND f.state = 'running'))
LIMIT :limit;

-- name: prune_count
-- One state per call, as prune_batch.
SELECT count(*) FROM jobdef_jobs INDEXED BY jobdef_jobs_finished
WHERE job = :job AND state = :state AND finished_at < :before
  -- A step of a running flow is kept: a waiting step may still read its result.
  AND (flow_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM jobdef_flows AS f WHERE f.id = flow_id AND f.state = 'running'));

-- name: delete_jobs
DELETE FROM jobdef_jobs WHERE id IN (SELECT value FROM json_each(:ids));

-- name: delete_attempts
DELETE FROM jobdef_attempts WHERE job_id IN (SELECT value FROM json_each(:ids));

-- name: expire_results
-- One batch of one job's stored results past its `result.retention`: the value is
-- cleared, the done row stays until its own retention. jobdef_jobs_results holds
-- only rows with a result, so a batch reads just the ones it clears.
UPDATE jobdef_jobs SET result = NULL
WHERE id IN (
    SELECT id FROM jobdef_jobs INDEXED BY jobdef_jobs_results
    WHERE job = :job AND result IS NOT NULL AND finished_at < :before
      -- A step of a running flow keeps its result: a waiting step may still read it.
      AND (flow_id IS NULL OR NOT EXISTS (
          SELECT 1 FROM jobdef_flows AS f WHERE f.id = flow_id AND f.state = 'running'))
    LIMIT :batch_size
);

-- name: stats
SELECT job, queue, state, count(*) AS count,
       CASE WHEN state = 'queued' THEN max(0, :now - min(run_after)) END AS oldest_age
FROM jobdef_jobs
GROUP BY job, queue, state
ORDER BY job, queue, state;

-- name: get_job
SELECT * FROM jobdef_jobs WHERE id = :job_id;

-- name: job_by_receipt
-- The job that holds a receipt token, through the unique index of receipts (the
-- caller then compares the token it found in constant time).
SELECT * FROM jobdef_jobs WHERE receipt = :receipt;

-- name: ended_jobs
-- Of the jobs that waiters wait for (`ids`), those that ended, whole, and those
-- that are gone (no job: `id` is NULL, `waited` names it); nothing for those still
-- queued or running. The waiters' poll: one statement for every waited job.
SELECT w.value AS waited, j.*
FROM json_each(:ids) AS w
LEFT JOIN jobdef_jobs AS j ON j.id = w.value
WHERE j.id IS NULL OR j.state IN ('done', 'dead', 'resolved', 'cancelled');

-- name: list_jobs
SELECT * FROM jobdef_jobs
WHERE (:state IS NULL OR state = :state) AND (:job IS NULL OR job = :job)
ORDER BY id DESC
LIMIT :limit;

-- name: job_attempts
-- Finished attempts; the running one is read from the job row.
SELECT job_id, attempt, worker_id, started_at, finished_at, outcome, error
FROM jobdef_attempts WHERE job_id = :job_id ORDER BY id;

-- name: processed_keys_exist
-- On the handler's own database, which need not be the job database.
-- sqlite_master is PostgreSQL's to_regclass.
SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'jobdef_processed_keys';

-- name: create_processed_keys
-- The time column is `processed_at` here and `created_at` on PostgreSQL: the
-- two engines' tables were made that way. No schema to create.
CREATE TABLE IF NOT EXISTS jobdef_processed_keys (
    key TEXT PRIMARY KEY,
    job_id INTEGER,
    processed_at REAL NOT NULL
);

-- name: record_processed_key
INSERT INTO jobdef_processed_keys (key, job_id, processed_at) VALUES (:key, :job_id, :now)
ON CONFLICT (key) DO NOTHING;

-- name: insert_outbox
-- One message per row of the engine's executemany, in the transition's
-- transaction; a message id already stored is not stored twice.
INSERT INTO jobdef_outbox (message_id, channel, event, job, payload, next_at, created_at)
VALUES (:message_id, :channel, :event, :job, :payload, :now, :now)
ON CONFLICT (message_id) DO NOTHING;

-- name: outbox_claim
-- Lease due messages to one sender. One UPDATE ... WHERE id IN (SELECT ...
-- LIMIT); PostgreSQL's locks the due rows with SKIP LOCKED first.
UPDATE jobdef_outbox SET lease_until = :lease_until
WHERE id IN (
    SELECT id FROM jobdef_outbox INDEXED BY jobdef_outbox_due
    WHERE delivered_at IS NULL AND next_at <= :now
      AND (lease_until IS NULL OR lease_until <= :now)
    ORDER BY next_at, id
    LIMIT :limit
)
RETURNING *;

-- name: outbox_delivered
UPDATE jobdef_outbox SET delivered_at = :now, lease_until = NULL
WHERE id IN (SELECT value FROM json_each(:ids)) AND delivered_at IS NULL;

-- name: outbox_failed
UPDATE jobdef_outbox
SET attempts = attempts + 1, last_error = :error, next_at = :next_at, lease_until = NULL
WHERE id = :id;

-- name: outbox_retry
-- Due now, lease freed; a delivered message is left as it is.
UPDATE jobdef_outbox SET next_at = :now, lease_until = NULL
WHERE id IN (SELECT value FROM json_each(:ids)) AND delivered_at IS NULL;

-- name: outbox_pending
SELECT * FROM jobdef_outbox WHERE delivered_at IS NULL ORDER BY id;

-- name: outbox_backlog
-- How many messages are not delivered yet, counted up to a limit only (the metrics
-- gauge's reading): a walk of the partial index of undelivered rows that stops
-- there, whatever the backlog.
SELECT count(*) AS backlog FROM (
    SELECT 1 FROM jobdef_outbox INDEXED BY jobdef_outbox_due
    WHERE delivered_at IS NULL LIMIT :limit
) AS undelivered;

-- name: set_paused
-- :now is not stored: this engine's jobdef_queues has no updated_at column.
INSERT INTO jobdef_queues (queue, paused) VALUES (:queue, :paused)
ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused;

-- name: queue_depths
-- Every queue that has a row (a paused one, a limited one) or active jobs, with its
-- pause state and depths, read only from the partial indexes of active rows, so the
-- finished rows (any number of them) are never read: the queues with queued jobs
-- by a skip scan of jobdef_jobs_claim_queue (one probe per queue), each queue's
-- queued jobs counted there up to :cap, the running ones from jobdef_jobs_running.
-- The oldest wait is a skip scan too, never a walk of the backlog: within one
-- (queue, priority) the index's first entry has the smallest run_after, so the
-- queue's oldest is the least of its priorities' first entries. `levels` finds the
-- queue's highest priority, then each next lower one (one probe each), and
-- `firsts` reads each priority's first run_after (one probe each: a scalar
-- subquery gives one column, and SQLite has no LATERAL to take both from one
-- probe, as PostgreSQL's does): two probes per distinct priority in the queue,
-- however many jobs it holds. INDEXED BY holds every read to the partial index.
-- The engine's reader (the dashboard's overview) reads this same text (backends/reads.py
-- SHARED_QUERIES).
WITH RECURSIVE
-- include: queued_queues,
levels(queue, priority) AS (
    SELECT present.queue,
           (SELECT j.priority FROM jobdef_jobs AS j INDEXED BY jobdef_jobs_claim_queue
            WHERE j.state = 'queued' AND j.queue = present.queue
            ORDER BY j.priority DESC LIMIT 1)
    FROM present WHERE present.queue IS NOT NULL
    UNION ALL
    SELECT levels.queue,
           (SELECT j.priority FROM jobdef_jobs AS j INDEXED BY jobdef_jobs_claim_queue
            WHERE j.state = 'queued' AND j.queue = levels.queue
              AND j.priority < levels.priority
            ORDER BY j.priority DESC LIMIT 1)
    FROM levels WHERE levels.priority IS NOT NULL
),
firsts(queue, run_after) AS (
    SELECT levels.queue,
           (SELECT j.run_after FROM jobdef_jobs AS j INDEXED BY jobdef_jobs_claim_queue
            WHERE j.state = 'queued' AND j.queue = levels.queue
              AND j.priority = levels.priority
            ORDER BY j.run_after LIMIT 1)
    FROM levels WHERE levels.priority IS NOT NULL
),
oldest AS (
    SELECT queue, min(run_after) AS run_after FROM firsts GROUP BY queue
),
running AS (
    SELECT queue, count(*) AS running FROM jobdef_jobs INDEXED BY jobdef_jobs_running
    WHERE state = 'running' GROUP BY queue
),
names AS (
    SELECT queue FROM present WHERE queue IS NOT NULL
    UNION SELECT queue FROM running
    UNION SELECT queue FROM jobdef_queues
)
SELECT n.queue,
       coalesce(q.paused, 0) AS paused,
       (SELECT count(*) FROM (SELECT 1 FROM jobdef_jobs INDEXED BY jobdef_jobs_claim_queue
                              WHERE state = 'queued' AND queue = n.queue LIMIT :cap)) AS queued,
       coalesce(r.running, 0) AS running,
       -- NULL when nothing is queued (no row in oldest): max() of a NULL is NULL.
       max(0, :now - o.run_after) AS oldest_queued_age
FROM names AS n
LEFT JOIN running AS r ON r.queue = n.queue
LEFT JOIN jobdef_queues AS q ON q.queue = n.queue
LEFT JOIN oldest AS o ON o.queue = n.queue
ORDER BY n.queue;

-- name: paused_queues
-- The queues a claim skips; while there are any, the engine claims queue by queue.
SELECT queue FROM jobdef_queues WHERE paused = 1;

-- name: set_trace_context
-- The enqueuer's trace context, in the enqueue's transaction, only for a job that has one.
UPDATE jobdef_jobs SET trace_context = :trace_context WHERE id = :job_id;

-- name: set_positional_args
-- How many args the enqueuer passed by position, in the enqueue's transaction, only
-- for a job that says (a django.tasks call).
UPDATE jobdef_jobs SET positional_args = :positional_args WHERE id = :job_id;

-- name: register_worker
-- A worker's row at its start (jobdef.backends.workers); a restart under the same id
-- replaces it.
INSERT INTO jobdef_workers (id, host, pid, queues, concurrency, lease_seconds, version,
                            started_at, last_beat)
VALUES (:id, :host, :pid, :queues, :concurrency, :lease_seconds, :version, :now, :now)
ON CONFLICT (id) DO UPDATE SET
    host = excluded.host, pid = excluded.pid, queues = excluded.queues,
    concurrency = excluded.concurrency, lease_seconds = excluded.lease_seconds,
    version = excluded.version, started_at = excluded.started_at,
    last_beat = excluded.last_beat;

-- name: beat_worker
-- Every lease/3 while the worker lives: one row by its primary key.
UPDATE jobdef_workers SET last_beat = :now WHERE id = :id;

-- name: unregister_worker
DELETE FROM jobdef_workers WHERE id = :id;

-- name: list_workers
-- No wake_channel column: no enqueue tells SQLite's workers anything.
SELECT id, host, pid, queues, concurrency, lease_seconds, version, started_at, last_beat,
       NULL AS wake_channel
FROM jobdef_workers ORDER BY started_at, id;

-- name: running_by_worker
-- The running jobs and their workers, through the partial index of running rows.
SELECT id, worker_id FROM jobdef_jobs INDEXED BY jobdef_jobs_running
WHERE state = 'running' AND worker_id IS NOT NULL;

-- name: prune_workers
-- Rows of workers that stopped beating long ago (they died without deleting theirs).
DELETE FROM jobdef_workers WHERE last_beat < :before;

-- name: insert_dead_elsewhere
-- A job that died in another runtime, stored dead as it arrives (jobdef.backends.elsewhere).
-- worker_id `<runtime>/<task id>` and created_at (the enqueue) name the run, so a second
-- report of the same death (a redelivered message) stores nothing.
INSERT INTO jobdef_jobs (job, queue, priority, args, state, attempt, max_attempts,
                  idempotency_key, run_after, created_at, updated_at, started_at,
                  finished_at, worker_id, last_error, last_delay)
SELECT :job, :queue, :priority, :args, 'dead', :attempt, :max_attempts, :key,
       :created_at, :created_at, :now, :started_at, :now, :worker_id, :error, :last_delay
WHERE NOT EXISTS (
    SELECT 1 FROM jobdef_jobs
    WHERE job = :job AND worker_id = :worker_id AND created_at = :created_at
)
RETURNING id;

-- name: find_dead_elsewhere
SELECT * FROM jobdef_jobs
WHERE job = :job AND worker_id = :worker_id AND created_at = :created_at
ORDER BY id LIMIT 1;

-- name: insert_attempt_elsewhere
INSERT INTO jobdef_attempts (job_id, attempt, worker_id, started_at, finished_at, outcome, error)
SELECT :job_id, :attempt, :worker_id, :started_at, :finished_at, :outcome, :error
WHERE NOT EXISTS (SELECT 1 FROM jobdef_attempts WHERE job_id = :job_id AND attempt = :attempt)
RETURNING id;

-- name: insert_outbox_elsewhere
-- One message; its id is computed from the stored row, so a repeated report adds none.
-- (`channel_name`: PostgreSQL's `channel` parameter is the workers' notify channel.)
INSERT INTO jobdef_outbox (message_id, channel, event, job, payload, next_at, created_at)
VALUES (:message_id, :channel_name, :event, :job, :payload, :now, :now)
ON CONFLICT (message_id) DO NOTHING
RETURNING id;

-- name: dead_count
-- One job's dead rows, counted up to :cap through the finished-rows index (the
-- finished_at term is its condition, which lets SQLite use that partial index).
SELECT count(*) AS count FROM (
    SELECT 1 FROM jobdef_jobs INDEXED BY jobdef_jobs_finished
    WHERE job = :job AND state = 'dead' AND finished_at IS NOT NULL LIMIT :cap
) AS d;

-- Flows (jobdef.backends.flows): each runs inside a transaction the engine holds,
-- SQLite's under its write lock, so no two settle a flow at once.

-- name: flow_lock_key
-- PostgreSQL's takes a transaction lock on the flow key; the write lock serves here.
SELECT :lock AS locked;

-- name: flow_find_duplicate
-- The flow a start with this key merges into: a running one, or one done since :since.
SELECT id, receipt FROM jobdef_flows
WHERE name = :name AND idempotency_key = :key
  AND (state = 'running' OR (state = 'done' AND :since IS NOT NULL AND finished_at >= :since))
ORDER BY id DESC LIMIT 1;

-- name: flow_insert
INSERT INTO jobdef_flows (name, receipt, idempotency_key, args, graph, state, deadline,
                          created_at)
VALUES (:name, :receipt, :key, :args, :graph, 'running', :deadline, :now)
RETURNING id;

-- name: flow_insert_steps
-- Every step of a flow in one statement, from a JSON array (flows.start).
INSERT INTO jobdef_jobs (job, queue, priority, args, state, max_attempts, run_after,
                         created_at, updated_at, receipt, flow_id, step, idempotency_key)
SELECT s.value ->> '$.job', s.value ->> '$.queue', s.value ->> '$.priority',
       json(s.value -> '$.args'), s.value ->> '$.state', s.value ->> '$.max_attempts',
       :now, :now, :now, s.value ->> '$.receipt', :flow_id, s.value ->> '$.step',
       s.value ->> '$.key'
FROM json_each(:steps) AS s;

-- name: flow_lock
-- The flow's row; PostgreSQL's locks it for the transaction.
SELECT id, name, receipt, state, args, graph, deadline, created_at, finished_at, note
FROM jobdef_flows WHERE id = :flow_id;

-- name: flow_steps
SELECT id, step, state, result, finished_at FROM jobdef_jobs WHERE flow_id = :flow_id;

-- name: flow_release_step
-- The step's key (its job's recipe over its args), as an enqueue would store it;
-- PostgreSQL's leaves it out while another active job of the same name holds it.
UPDATE jobdef_jobs
SET state = 'queued', args = :args, run_after = :now, updated_at = :now,
    idempotency_key = :key
WHERE id = :job_id AND state = 'waiting';

-- name: flow_cancel_step
UPDATE jobdef_jobs SET state = 'cancelled', note = :note, finished_at = :now, updated_at = :now
WHERE id = :job_id AND state = 'waiting';

-- name: flow_end
UPDATE jobdef_flows SET state = :state, finished_at = :now WHERE id = :flow_id;

-- name: flow_mark_cancelled
UPDATE jobdef_flows SET note = :note WHERE id = :flow_id AND note IS NULL;

-- name: flow_cancel_targets
-- A cancelled flow's steps that may still end, as they are before the cancel
-- (as cancel_job_target); PostgreSQL's locks them, in id order, before the flow's row.
SELECT id, state, attempt, worker_id, started_at FROM jobdef_jobs
WHERE flow_id = :flow_id AND state IN ('queued', 'running') ORDER BY id;

-- name: flow_cancel_steps
-- Waiting, queued and running steps; a running one's lease is cleared (cancel_job).
UPDATE jobdef_jobs
SET state = 'cancelled', note = :note, finished_at = :now, updated_at = :now,
    lease_until = NULL
WHERE flow_id = :flow_id AND state IN ('waiting', 'queued', 'running');

-- name: flow_cancel_orphans
-- Waiting steps whose flow row is gone.
UPDATE jobdef_jobs SET state = 'cancelled', note = :note, finished_at = :now, updated_at = :now
WHERE flow_id IS NOT NULL AND state = 'waiting'
  AND NOT EXISTS (SELECT 1 FROM jobdef_flows AS f WHERE f.id = jobdef_jobs.flow_id)
RETURNING id;

-- name: flow_past_deadline
SELECT id FROM jobdef_flows INDEXED BY jobdef_flows_running
WHERE state = 'running' AND deadline < :now ORDER BY deadline LIMIT :limit;

-- name: flow_stuck
-- Running flows with no step queued or running: no step's end will settle them.
SELECT f.id FROM jobdef_flows AS f INDEXED BY jobdef_flows_running
WHERE f.state = 'running'
  AND NOT EXISTS (SELECT 1 FROM jobdef_jobs AS j
                  WHERE j.flow_id = f.id AND j.state IN ('queued', 'running'))
ORDER BY f.id LIMIT :limit;

-- name: flow_get
SELECT id, name, receipt, state, args, graph, deadline, created_at, finished_at, note
FROM jobdef_flows WHERE id = :flow_id;

-- name: flow_by_receipt
SELECT id, name, receipt, state, args, graph, deadline, created_at, finished_at, note
FROM jobdef_flows WHERE receipt = :receipt;

-- name: flow_list
SELECT id, name, receipt, state, args, graph, deadline, created_at, finished_at, note
FROM jobdef_flows
WHERE id < :before AND id >= :floor
  AND (:state IS NULL OR state = :state) AND (:name IS NULL OR name = :name)
ORDER BY id DESC LIMIT :limit;

-- name: flow_counts
SELECT name, state, count(*) AS count FROM jobdef_flows GROUP BY name, state ORDER BY name, state;


-- name: prune_flows_batch
-- One batch of ended flows none of whose steps' rows remain, after the cursor :after
-- (the walk of one prune reads each ended flow once). jobdef_flows_ended holds only
-- ended flows; each one's steps are probed through jobdef_jobs_flow. An ended flow
-- gets no new step, so a flow seen here with no step has none for good.
DELETE FROM jobdef_flows WHERE id IN (
    SELECT f.id FROM jobdef_flows AS f INDEXED BY jobdef_flows_ended
    WHERE f.state <> 'running' AND f.id > :after
      AND NOT EXISTS (
          SELECT 1 FROM jobdef_jobs AS j INDEXED BY jobdef_jobs_flow WHERE j.flow_id = f.id)
    ORDER BY f.id
    LIMIT :limit
)
RETURNING id;

-- name: prune_flows_count
-- As prune_flows_batch, counted (prune --dry-run).
SELECT count(*) AS count FROM jobdef_flows AS f INDEXED BY jobdef_flows_ended
WHERE f.state <> 'running'
  AND NOT EXISTS (
      SELECT 1 FROM jobdef_jobs AS j INDEXED BY jobdef_jobs_flow WHERE j.flow_id = f.id);
