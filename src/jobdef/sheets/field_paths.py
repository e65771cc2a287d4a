"""The fields a document sets, as merging Defaults into a Job sees them: the mappings
that merge field by field (``backoff``...) and ``runtime`` opened one level.

Apart from :mod:`jobdef.sheets.build` so that the rules that read documents as written
(one Defaults per field, JD272) need not load the policy model that building needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobdef.sheets.document import Path_

# Fields a Job may inherit from Defaults, merged one level deep for mappings.
MERGED_MAPPINGS = (
    "backoff",
    "idempotency",
    "errors",
    "dead_letter",
    "notify",
    "retention",
    "limits",
    "result",
)


# ``runtime`` is opened one level too, into one entry per runtime (``runtime.celery``):
# a Job's entry is merged with the Defaults' (jobdef.sheets.build).
RUNTIME = "runtime"


def field_paths(data: Mapping[str, Any]) -> dict[Path_, Any]:
    """The fields a document sets, mappings that merge (``backoff``...) and ``runtime``
    opened one level."""
    out: dict[Path_, Any] = {}
    for key, value in data.items():
        if (key in MERGED_MAPPINGS or key == RUNTIME) and isinstance(value, Mapping):
            out.update({(key, k): v for k, v in value.items()})
        else:
            out[(key,)] = value
    return out
