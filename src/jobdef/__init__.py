"""jobdef: job definition sheets that validate, document and run background jobs.

One YAML sheet per job is the single source of truth: the validator checks it,
the docs are generated from it, and the worker loads its retry, timeout,
idempotency, dead-letter, notification and retention policy from it.
"""

from __future__ import annotations

__version__ = "0.1.0.dev0"
