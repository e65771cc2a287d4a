-- The store's own name: one row, its id drawn at random when the tables are made
-- (here, or by a later initial file), so two URLs that reach one database (a relative
-- and an absolute path, a symlink) are known to be one store by what it holds, not
-- by how they are spelt. A copy of the file is a copy of its id.
CREATE TABLE jobdef_store (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL
);

INSERT INTO jobdef_store (id, created_at)
VALUES (lower(hex(randomblob(16))), (julianday('now') - 2440587.5) * 86400.0);
