"""How one effective value reads in a review: ``600.0`` at ``backoff.max`` reads ``10m``.

Kept in one function so that every review output formats values the same way.
"""

from __future__ import annotations

import json
from typing import Any

from jobdef.durations import format_duration
from jobdef.review.effective import DURATION_PATHS

# What an absent (None) value means, per field; anything else reads "none".
_ABSENT = {
    "en": {
        "backoff.max": "no cap",
        "deadline": "no deadline",
        "idempotency.key": "no key",
        "idempotency.dedupe_window": "while queued or running",
        "notify.channel": "no channel",
        "retention.done": "forever",
        "retention.dead": "until resolved",
        "schedule": "no schedule",
        "": "none",
    },
    "ja": {
        "backoff.max": "上限なし",
        "deadline": "期限なし",
        "idempotency.key": "キーなし",
        "idempotency.dedupe_window": "待機中・実行中のみ",
        "notify.channel": "通知なし",
        "retention.done": "無期限",
        "retention.dead": "解決されるまで",
        "schedule": "スケジュールなし",
        "": "なし",
    },
}


def format_value(path: str, value: Any, lang: str = "en") -> str:
    """``value`` of the field at ``path`` the way a reviewer reads it."""
    absent = _ABSENT.get(lang, _ABSENT["en"])
    if value is None or value in ([], ""):
        return absent.get(path, absent[""])
    if path in DURATION_PATHS:
        if isinstance(value, list):
            return ", ".join(format_duration(v, lang) for v in value)
        return format_duration(value, lang)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return str(value)
