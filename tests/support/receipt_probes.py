"""What a receipt endpoint may show, and the requests that must all get its one 404:
shared by the ASGI app's tests (tests/receipts) and the Django views' (tests/contrib/django)."""

from __future__ import annotations

from jobdef.backends.records import Receipt

NOT_FOUND = b'{"error":"not_found"}'

# Every key a receipt's object may have: a new key is a decision, made in
# jobdef.runtime.receipt_view and written in docs/receipts.md.
KEYS = {
    "state",
    "ended",
    "label",
    "lang",
    "title",
    "attempts",
    "max_attempts",
    "progress",
    "next_start",
    "created_at",
    "started_at",
    "finished_at",
    "result",
    "args",
}


def hostile_tokens(receipt: Receipt) -> list[str]:
    """Texts in the place of ``receipt``'s token that name no job, each as it goes in a
    URL path: ids, near misses of the real token, huge and odd ones."""
    token = receipt.token
    last = "A" if token[-1] != "A" else "B"
    return [
        str(receipt.job_id),
        "1",
        "0",
        "-1",
        token[:-1],
        f"{token}A",
        f"{token[:-1]}{last}",
        token.swapcase(),
        token[:16],
        f"{token}%00",
        f"{token}%20",
        f"%20{token}",
        "A" * 129,
        "A" * 8000,
        "0" * 35,
        "%C3%A9" * 20,
        "' OR '1'='1",
        "%25",
        "%2e%2e",
    ]


def hostile_paths(receipt: Receipt) -> list[str]:
    """Paths an app must answer exactly as an unknown token: :func:`hostile_tokens`,
    traversal, and every other route."""
    token = receipt.token
    return [
        *(f"/receipts/{text}" for text in hostile_tokens(receipt)),
        f"/receipts/{token}/",
        f"/receipts/{token}/events/",
        f"/receipts/{token}/../{receipt.job_id}",
        f"/receipts/..%2F{receipt.job_id}",
        "/receipts/..%2F..%2Fjobs",
        "/receipts/",
        "/receipts",
        "/",
        f"/jobs/{receipt.job_id}",
        f"/api/jobs/{receipt.job_id}",
    ]
