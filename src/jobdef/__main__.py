"""``python -m jobdef``: the same as the ``jobdef`` command."""

from __future__ import annotations

from jobdef.cli import main

raise SystemExit(main())
