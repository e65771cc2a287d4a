-- Queued rows per queue in claim order: the claim under queue limits reads each
-- queue on its own, so a deep backlog in a capped queue does not slow it down.
CREATE INDEX jobs_claim_queue ON jobs (queue, priority DESC, run_after, id)
    WHERE state = 'queued';
