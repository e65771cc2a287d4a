"""A tiny ASGI app (Starlette, served by uvicorn) whose jobs the embedded worker runs.

It follows the lifespan recipe of docs/testing.md: the worker starts with the
app and drains at its shutdown, which uvicorn runs on SIGTERM. ``POST
/orders?count=N`` enqueues N jobs. The store, the sheets and the ledger come
from ``SHOP_DB``, ``SHOP_SHEETS`` and ``SHOP_LEDGER``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from jobdef import WorkerSettings, connect, load_registry
from jobdef.runtime.embedded import embedded_worker

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
queue = connect(os.environ["SHOP_DB"], load_registry([os.environ["SHOP_SHEETS"]]))


async def orders(request: Request) -> JSONResponse:
    count = int(request.query_params.get("count", "1"))
    ledger = os.environ["SHOP_LEDGER"]
    ids = [
        queue.enqueue("steady", {"ledger": ledger, "index": i, "seconds": 0.3}).id
        for i in range(count)
    ]
    return JSONResponse({"ids": ids})


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    settings = WorkerSettings(concurrency=2, grace=30.0, lease_seconds=1.0)
    worker = embedded_worker(queue, settings=settings).start()
    try:
        yield
    finally:
        await asyncio.to_thread(worker.stop)  # drains without blocking the event loop


app = Starlette(routes=[Route("/orders", orders, methods=["POST"])], lifespan=lifespan)
