-- A job store written by the SQLite engine of the release before the jobdef_
-- prefix (schema versions 0001..0003, commit 66e61aa), as `sqlite3 .dump` prints it.
-- Jobs 1..13 cover every state: queued (fresh, after a failed attempt, released at
-- shutdown, scheduled for later), running (first attempt, second after a timeout),
-- done (first try, after a crash), dead, resolved, cancelled, and a scheduled batch
-- job running under a rate limit; job 14 was pruned, so the id sequence is past
-- max(id). Attempts, outbox rows (delivered, failed once, pending), a processed
-- key, a cron slot, a paused queue and a used token bucket are in it too.
BEGIN TRANSACTION;
CREATE TABLE attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    worker_id TEXT NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL,
    outcome TEXT,
    error_type TEXT,
    error_message TEXT,
    error_traceback TEXT
);
INSERT INTO "attempts" VALUES(1,2,1,'w1',1700000014.0,1700000015.0,'retry','builtins.ValueError','smtp down','Traceback (most recent call last):
  ...
ValueError: smtp down');
INSERT INTO "attempts" VALUES(2,3,1,'w1',1700000016.0,NULL,NULL,NULL,NULL,NULL);
INSERT INTO "attempts" VALUES(3,4,1,'w1',1700000018.0,1700000019.0,'timeout','jobdef.runtime.errors.Timeout','took longer than 30s',NULL);
INSERT INTO "attempts" VALUES(4,4,2,'w2',1700000020.0,NULL,NULL,NULL,NULL,NULL);
INSERT INTO "attempts" VALUES(5,5,1,'w1',1700000021.0,1700000022.0,'done',NULL,NULL,NULL);
INSERT INTO "attempts" VALUES(6,6,1,'w1',1700000023.0,1700000024.0,'crashed','jobdef.runtime.errors.WorkerCrashed','exit code -9',NULL);
INSERT INTO "attempts" VALUES(7,6,2,'w2',1700000025.0,1700000026.0,'done',NULL,NULL,NULL);
INSERT INTO "attempts" VALUES(8,7,1,'w1',1700000027.0,1700000028.0,'dead','builtins.ValueError','bad address','Traceback (most recent call last):
  ...
ValueError: bad address');
INSERT INTO "attempts" VALUES(9,8,1,'w1',1700000029.0,1700000030.0,'dead','builtins.ValueError','quota','Traceback (most recent call last):
  ...
ValueError: quota');
INSERT INTO "attempts" VALUES(10,10,1,'w1',1700000033.0,1700000034.0,'released',NULL,NULL,NULL);
INSERT INTO "attempts" VALUES(11,11,1,'w1',1700000035.0,1700000036.0,'done',NULL,NULL,NULL);
INSERT INTO "attempts" VALUES(13,12,1,'w3',1700000048.0,NULL,NULL,NULL,NULL,NULL);
CREATE TABLE job_slots (
    job TEXT NOT NULL,
    slot REAL NOT NULL,
    job_id INTEGER NOT NULL,
    PRIMARY KEY (job, slot)
) WITHOUT ROWID;
INSERT INTO "job_slots" VALUES('nightly',1699999200.0,12);
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job TEXT NOT NULL,
    queue TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    args TEXT NOT NULL,
    state TEXT NOT NULL
        CHECK (state IN ('queued', 'running', 'done', 'dead', 'resolved', 'cancelled')),
    attempt INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    idempotency_key TEXT,
    run_after REAL NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    finished_at REAL,
    worker_id TEXT,
    lease_until REAL,
    last_error_type TEXT,
    last_error_message TEXT,
    last_error_traceback TEXT,
    last_delay REAL,
    progress TEXT,
    note TEXT,
    slot REAL
);
INSERT INTO "jobs" VALUES(1,'mail','queued',0,'{"case":"queued"}','queued',0,3,NULL,1700000000.0,1700000000.0,1700000000.0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO "jobs" VALUES(2,'mail','queued_retried',0,'{"case":"queued_retried"}','queued',1,3,NULL,1700000075.0,1700000001.0,1700000015.0,NULL,NULL,NULL,'builtins.ValueError','smtp down','Traceback (most recent call last):
  ...
ValueError: smtp down',60.0,NULL,NULL,NULL);
INSERT INTO "jobs" VALUES(3,'mail','running',0,'{"case":"running"}','running',1,3,NULL,1700000002.0,1700000002.0,1700000017.0,NULL,'w1',1700000317.0,NULL,NULL,NULL,NULL,'{"done": 3}',NULL,NULL);
INSERT INTO "jobs" VALUES(4,'mail','running_second',0,'{"case":"running_second"}','running',2,3,NULL,1700000019.0,1700000003.0,1700000020.0,NULL,'w2',1700000320.0,'jobdef.runtime.errors.Timeout','took longer than 30s',NULL,0.0,NULL,NULL,NULL);
INSERT INTO "jobs" VALUES(5,'mail','done',0,'{"case":"done"}','done',1,3,NULL,1700000004.0,1700000004.0,1700000022.0,1700000022.0,'w1',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO "jobs" VALUES(6,'mail','done_after_retry',0,'{"case":"done_after_retry"}','done',2,3,NULL,1700000024.0,1700000005.0,1700000026.0,1700000026.0,'w2',NULL,'jobdef.runtime.errors.WorkerCrashed','exit code -9',NULL,0.0,NULL,NULL,NULL);
INSERT INTO "jobs" VALUES(7,'mail','dead',0,'{"case":"dead"}','dead',1,3,NULL,1700000006.0,1700000006.0,1700000028.0,1700000028.0,'w1',NULL,'builtins.ValueError','bad address','Traceback (most recent call last):
  ...
ValueError: bad address',NULL,NULL,NULL,NULL);
INSERT INTO "jobs" VALUES(8,'mail','resolved',0,'{"case":"resolved"}','resolved',1,3,NULL,1700000007.0,1700000007.0,1700000031.0,1700000031.0,'w1',NULL,'builtins.ValueError','quota','Traceback (most recent call last):
  ...
ValueError: quota',NULL,NULL,'sent by hand',NULL);
INSERT INTO "jobs" VALUES(9,'mail','cancelled',0,'{"case":"cancelled"}','cancelled',0,3,NULL,1700000008.0,1700000008.0,1700000032.0,1700000032.0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO "jobs" VALUES(10,'mail','released',0,'{"case":"released"}','queued',0,3,NULL,1700000009.0,1700000009.0,1700000034.0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO "jobs" VALUES(11,'mail','keyed',0,'{"case":"keyed"}','done',1,3,'k-1',1700000010.0,1700000010.0,1700000036.0,1700000036.0,'w1',NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
INSERT INTO "jobs" VALUES(12,'nightly','batch',0,'{"case":"slotted"}','running',1,3,NULL,1700000011.0,1700000011.0,1700000048.0,NULL,'w3',1700000348.0,NULL,NULL,NULL,NULL,NULL,NULL,1699999200.0);
INSERT INTO "jobs" VALUES(13,'mail','later',0,'{"case":"later"}','queued',0,3,NULL,1700086412.0,1700000012.0,1700000012.0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL);
CREATE TABLE outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL UNIQUE,
    channel TEXT NOT NULL,
    event TEXT NOT NULL,
    job TEXT NOT NULL,
    payload TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL,
    created_at REAL NOT NULL,
    delivered_at REAL,
    last_error TEXT,
    lease_until REAL
);
INSERT INTO "outbox" VALUES(1,'m-retry-2','ops','retry','mail','{"job_id": 2, "event": "retry"}',0,1700000015.0,1700000015.0,1700000049.0,NULL,NULL);
INSERT INTO "outbox" VALUES(2,'m-done-5','ops','done','mail','{"job_id": 5, "event": "done"}',1,1700000079.0,1700000022.0,NULL,'HTTP 503',NULL);
INSERT INTO "outbox" VALUES(3,'m-dead-7','ops','dead','mail','{"job_id": 7, "event": "dead"}',0,1700000028.0,1700000028.0,NULL,NULL,1700000079.0);
CREATE TABLE processed_keys (
    key TEXT PRIMARY KEY,
    job_id INTEGER,
    processed_at REAL NOT NULL
);
INSERT INTO "processed_keys" VALUES('mail:k-1',11,1700000036.0);
CREATE TABLE queue_state (
    queue TEXT PRIMARY KEY,
    paused INTEGER NOT NULL DEFAULT 0
, tokens REAL, tokens_at REAL);
INSERT INTO "queue_state" VALUES('mail',1,NULL,NULL);
INSERT INTO "queue_state" VALUES('batch',0,1.0,1700000048.0);
CREATE TABLE schema_version (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at REAL NOT NULL
);
INSERT INTO "schema_version" VALUES(1,'0001_initial.sql',1700000000.0);
INSERT INTO "schema_version" VALUES(2,'0002_queue_rate.sql',1700000000.0);
INSERT INTO "schema_version" VALUES(3,'0003_claim_per_queue.sql',1700000000.0);
CREATE INDEX jobs_claim ON jobs (priority DESC, run_after, id) WHERE state = 'queued';
CREATE INDEX jobs_running ON jobs (lease_until, queue) WHERE state = 'running';
CREATE INDEX jobs_key ON jobs (job, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_finished ON jobs (job, state, finished_at)
    WHERE state IN ('done', 'dead', 'resolved', 'cancelled');
CREATE INDEX attempts_job ON attempts (job_id, attempt);
CREATE INDEX outbox_due ON outbox (next_at, id) WHERE delivered_at IS NULL;
CREATE INDEX jobs_claim_queue ON jobs (queue, priority DESC, run_after, id)
    WHERE state = 'queued';
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('jobs',14);
INSERT INTO "sqlite_sequence" VALUES('attempts',13);
INSERT INTO "sqlite_sequence" VALUES('outbox',3);
COMMIT;
