"""Steps the dashboard tests share: jobs put into a state through the backend verbs, and an
HTTP client that keeps cookies as a browser does."""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

from jobdef.backends.protocol import Backend
from jobdef.backends.records import ClaimOptions, ErrorInfo, JobRecord
from jobdef.runtime.queue import Queue
from support import eventually

HERE = Path(__file__).resolve().parent
SHEETS = HERE / "sheets"
SRC = HERE.parent.parent / "src"


def make_dead(
    backend: Backend, queue: Queue, job: str, args_list: list[dict[str, Any]], error: ErrorInfo
) -> list[int]:
    """Enqueue jobs and bury each at its first attempt with ``error`` (through the verbs)."""
    ids = [queue.enqueue(job, args).id for args in args_list]
    claimed: list[JobRecord] = []

    def all_claimed() -> bool:
        # The enqueue's run_after is on the queue's clock: on PostgreSQL another
        # session's estimate of the server clock may be a moment behind it.
        options = ClaimOptions(worker_id="test", lease_seconds=60, limit=len(ids))
        claimed.extend(backend.claim(options))
        return len(claimed) >= len(ids)

    eventually(all_claimed, 10, "the new jobs to be claimable")
    assert sorted(r.id for r in claimed) == sorted(ids), "only these jobs may be queued"
    for record in claimed:
        assert backend.bury(record.lease, error)
    return ids


class Client:
    """urllib with a cookie jar: what a browser keeps between requests, no more."""

    def __init__(self, base: str, headers: dict[str, str] | None = None) -> None:
        self.base = base
        self.headers = headers or {}
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))

    def request(
        self, path: str, form: list[tuple[str, str]] | None = None
    ) -> tuple[int, dict[str, str], str]:
        data = None if form is None else urllib.parse.urlencode(form).encode()
        req = urllib.request.Request(self.base + path, data=data, headers=self.headers)
        try:
            with self.opener.open(req, timeout=30) as response:
                return response.status, dict(response.headers), response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read().decode()

    def csrf(self, path: str = "/jobs") -> str:
        """The CSRF token a page hands out (and sets in the cookie)."""
        status, _, body = self.request(path)
        assert status == 200
        found = re.search(r'name="csrf" value="([^"]+)"', body)
        assert found, "the page has no CSRF field"
        return found.group(1)
