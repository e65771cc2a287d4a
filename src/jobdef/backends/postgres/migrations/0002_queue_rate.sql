-- Each rate-limited queue keeps its token bucket in its row, shared by every
-- worker and host: tokens left as of tokens_at (NULL: never used, full).
ALTER TABLE {schema}.jobdef_queues
    ADD COLUMN tokens double precision,
    ADD COLUMN tokens_at double precision;
