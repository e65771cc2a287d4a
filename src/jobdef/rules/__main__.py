"""``python -m jobdef.rules``: print docs/rules.md."""

from __future__ import annotations

import sys

from jobdef.rules import rules_markdown

sys.stdout.write(rules_markdown())
