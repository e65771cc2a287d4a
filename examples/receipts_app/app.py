"""A small application whose page shows a receipt: the request returns at once with a
receipt number, a worker builds the report, and the page follows the job (accepted ->
running -> done) through jobdef's receipt endpoint, without a reload.

``create_app(db_url)`` is the whole application (``run.py`` serves it beside a worker):

- ``GET /``: the page, with a form;
- ``POST /reports``: enqueues ``build_report`` and answers its receipt token;
- ``/api/receipts/{token}`` and ``/api/receipts/{token}/events``: jobdef's endpoint
  (:func:`jobdef.contrib.receipts.receipt_app`), which shows what the sheet allows.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route

from jobdef.contrib.receipts import receipt_app
from jobdef.errors import ArgsError
from jobdef.runtime.queue import connect
from jobdef.sheets.pipeline import load_registry

HERE = Path(__file__).resolve().parent
SHEETS = HERE / "jobdefs"
PAGE = (HERE / "page.html").read_text(encoding="utf-8")


def create_app(db_url: str, *, look_seconds: float = 0.5) -> Starlette:
    """The application on the job store at ``db_url``."""
    queue = connect(db_url, load_registry([SHEETS]))

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE, headers={"referrer-policy": "no-referrer"})

    async def order(request: Request) -> Response:
        form = await request.json()
        args = {"month": form.get("month"), "seconds": form.get("seconds", 5)}
        try:
            receipt = await run_in_threadpool(queue.enqueue, "build_report", args)
        except ArgsError as exc:
            return JSONResponse({"error": str(exc)}, 400)
        # The token alone: the job's id is not the page's business.
        return JSONResponse({"receipt": receipt.token}, headers={"cache-control": "no-store"})

    routes = [
        Route("/", page),
        Route("/reports", order, methods=["POST"]),
        Mount("/api", receipt_app(queue, look_seconds=look_seconds)),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        queue.close()

    return Starlette(routes=routes, lifespan=lifespan)
