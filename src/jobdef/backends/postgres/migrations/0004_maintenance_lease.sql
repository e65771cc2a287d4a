-- The maintenance lease: which engine runs reclaim, pruning, the scheduler and the
-- outbox sender for the whole schema. It used to be a session-level advisory
-- lock, which a frozen worker (SIGSTOP, a deadlock) keeps as long as its session
-- lives, so maintenance stopped for every host. A lease in a row lapses instead:
-- the holder renews it before expires_at, and once it has lapsed any engine takes
-- it over and adds one to generation, so a holder that comes back finds a
-- generation not its own and stops maintaining. expires_at is epoch seconds on
-- the server's clock, the one clock every host agrees on.
CREATE TABLE {schema}.jobdef_leases (
    name       text PRIMARY KEY,
    holder     text NOT NULL,
    generation bigint NOT NULL,
    expires_at double precision NOT NULL
);
