-- Each rate-limited queue keeps its token bucket in its row, shared by every
-- worker of the store: tokens left as of tokens_at (NULL: never used, full).
ALTER TABLE queue_state ADD COLUMN tokens REAL;
ALTER TABLE queue_state ADD COLUMN tokens_at REAL;
