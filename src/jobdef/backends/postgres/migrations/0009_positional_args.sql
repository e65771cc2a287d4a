-- How many of a job's args its enqueuer passed by position, in the order of the
-- handler's parameters (a django.tasks call, `send.enqueue(5)`), so the call can be
-- given back as it was made; NULL when every arg was given by name, as a sheet's
-- args are. The args themselves stay by name.
-- A nullable column without a default: adding it rewrites no row.
ALTER TABLE {schema}.jobdef_jobs ADD COLUMN positional_args integer;
