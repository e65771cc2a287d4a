"""``python -m jobdef``: the same as the ``jobdef`` command."""

from __future__ import annotations

from jobdef.cli import main

# The guard matters: the worker's handler processes are started with the "spawn"
# method, which imports this module again as __mp_main__; unguarded, each would
# run the command line again.
if __name__ == "__main__":
    raise SystemExit(main())
