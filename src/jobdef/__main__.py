"""``python -m jobdef``: the same as the ``jobdef`` command."""

from __future__ import annotations

import sys

from jobdef.cli import main

if __name__ == "__main__":
    sys.exit(main())
