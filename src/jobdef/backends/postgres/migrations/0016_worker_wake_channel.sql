-- Each listening worker's own notification channel (jobdef.runtime.wake_share): an
-- enqueue tells only the idle workers whose turn its jobs are, on their own channels,
-- where before it told every listening worker on the schema's channel, and each woke
-- to find whether it was its turn. NULL: a worker of an earlier jobdef, which listens
-- on the schema's channel only (an enqueue for its queue then tells that channel, as
-- before); '': a worker that does not listen (?wake=poll), which takes no turn.
-- A nullable column without a default: adding it rewrites no row.
ALTER TABLE {schema}.jobdef_workers ADD COLUMN IF NOT EXISTS wake_channel text;
