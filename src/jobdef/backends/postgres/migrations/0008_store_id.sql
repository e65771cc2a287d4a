-- The store's own name: one row, its id drawn at random when the tables are made,
-- so two URLs that reach one schema (localhost and 127.0.0.1, a pooler and the
-- server) are known to be one store by what it holds, not by how they are spelt.
-- A dump restored elsewhere is a copy of its id.
CREATE TABLE {schema}.jobdef_store (
    id         text PRIMARY KEY,
    created_at double precision NOT NULL
);

INSERT INTO {schema}.jobdef_store (id, created_at)
VALUES (replace(gen_random_uuid()::text, '-', ''), extract(epoch FROM clock_timestamp()));
