"""``python -m jobdef.sheets.rules``: print docs/rules.md."""

from __future__ import annotations

import sys

from jobdef.sheets.rules import rules_markdown

sys.stdout.write(rules_markdown())
