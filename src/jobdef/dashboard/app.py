"""The dashboard as an ASGI application: :func:`create_app`.

Server-rendered pages (Jinja2, autoescaped: args and error messages are
attacker-controlled text), each with a JSON twin under ``/api/``; actions are
POST forms that ask for confirmation first; live updates come over
server-sent events (``/events``), which tell the page *that* something changed
and let it fetch itself again. The one script is ``static/dashboard.js``;
every page reads fine without it.

Mount it in another ASGI application (``Mount("/jobs", create_app(...))``):
links start from the mount point (the request's ``root_path``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from jobdef.dashboard import flows, views, workers
from jobdef.dashboard.guard import Guard
from jobdef.dashboard.live import events_endpoint
from jobdef.dashboard.posts import (
    action_endpoint,
    dead_action,
    flow_action,
    job_action,
    outbox_action,
    queue_action,
)
from jobdef.dashboard.security import MIN_SECRET_BYTES, Auth, HostCheck, new_secret
from jobdef.dashboard.site import HERE, Dashboard
from jobdef.dashboard.store import Store
from jobdef.errors import JobdefError, UsageError
from jobdef.policy.leases import DEFAULT_LEASE, MIN_LEASE
from jobdef.policy.registry import Registry
from jobdef.sheets.pipeline import load_registry

# Seconds between two looks at the store for the live updates.
POLL_SECONDS = 1.0


def create_app(
    db_url: str,
    sheets: str | Path | Iterable[str | Path] | Registry,
    auth: Auth | None = None,
    *,
    read_only: bool = False,
    docs_url: str | None = None,
    sheet_link: str | None = None,
    clock: Callable[[], float] | None = None,
    poll_seconds: float = POLL_SECONDS,
    lease: float = DEFAULT_LEASE,
    allowed_hosts: Iterable[str] = (),
    secret: bytes | str | None = None,
    runtime_app: object | None = None,
) -> Starlette:
    """The dashboard of the job store at ``db_url`` for the jobs of ``sheets``.

    ``sheets``: a folder, files, or a loaded :class:`Registry`. ``auth``: the
    credentials every request must carry (None: none asked; serve on loopback
    only, which ``jobdef dashboard`` enforces). ``read_only``: no actions.
    ``docs_url``: where the pages of ``jobdef docs`` are served, for links
    (``{docs_url}/{job}.md``). ``sheet_link``: a link for a sheet value, with
    ``{file}`` and ``{line}`` (e.g. a repository's blob URL). ``lease``: the workers'
    lease (``jobdef worker --lease``), which a lost attempt's planned bounds allow for.
    ``runtime_app``: the Celery app or :class:`~jobdef.adapters.rq.SheetQueue` that
    a requeue sends a job which died in Celery or RQ back through, or one of each
    (:class:`~jobdef.adapters.requeue.Targets`); else the result says, for each such
    job, how to give one.

    The store must exist and be current (``jobdef db upgrade``).
    """
    if isinstance(lease, bool) or not (
        isinstance(lease, int | float) and MIN_LEASE <= lease < math.inf
    ):
        raise UsageError(
            f"lease={str(lease)[:40]}: the workers' lease is seconds, {MIN_LEASE:g} or more, "
            f"as given to jobdef worker --lease (default {DEFAULT_LEASE:g})"
        )
    if isinstance(sheets, Registry):
        registry, base = sheets, None
    else:
        paths = [sheets] if isinstance(sheets, str | Path) else list(sheets)
        registry = load_registry([Path(p) for p in paths])
        first = Path(paths[0]) if paths else None
        base = (first if first.is_dir() else first.parent).parent if first else None
    hosts = HostCheck([allowed_hosts] if isinstance(allowed_hosts, str) else allowed_hosts)
    key = _secret(secret)
    store = Store(db_url, clock=clock)
    state = Dashboard(
        store,
        registry,
        read_only=read_only,
        base=base,
        docs_url=docs_url,
        sheet_link=sheet_link,
        poll_seconds=poll_seconds,
        lease=lease,
        secret=key,
    )
    state.app = runtime_app
    routes = _routes(state)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        store.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.dashboard = state
    app.add_middleware(Guard, auth=auth, hosts=hosts)
    return app


def _secret(secret: bytes | str | None) -> bytes:
    if secret is None:
        return new_secret()
    key = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
    if len(key) < MIN_SECRET_BYTES:
        raise UsageError(
            f"secret= has {len(key)} bytes; use at least {MIN_SECRET_BYTES} random ones, "
            "e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return key


def _routes(d: Dashboard) -> list[Route | Mount]:
    store, registry = d.store, d.registry

    def guarded(
        builder: Callable[[Request], dict[str, Any] | None], template: str, title: str
    ) -> tuple[Callable[[Request], Awaitable[Response]], Callable[[Request], Awaitable[Response]]]:
        async def html(request: Request) -> Response:
            return await run_in_threadpool(render, request, False)

        async def api(request: Request) -> Response:
            return await run_in_threadpool(render, request, True)

        def render(request: Request, as_json: bool) -> Response:
            since = "" if as_json else d.since()
            try:
                data = builder(request)
            except UsageError as exc:
                return d.fail(request, 400, exc.message, as_json)
            except JobdefError as exc:
                return d.fail(request, 503, exc.message, as_json)
            if data is None:
                missing = "no such flow" if title == "Flow" else "no such job"
                return d.fail(request, 404, missing, as_json)
            if as_json:
                return JSONResponse(data)
            return d.page(request, template, title=title, data=data, since=since)

        return html, api

    def job_id(request: Request) -> int:
        return int(request.path_params["job_id"])

    pages: list[tuple[str, Callable[[Request], dict[str, Any] | None], str, str]] = [
        ("/", lambda r: views.overview(store, registry), "overview.html", "Overview"),
        (
            "/jobs",
            lambda r: {
                **views.jobs(store, views.parse_filter(r.query_params, store.clock()), registry),
                "job_names": sorted(registry.jobs),
                "states": views.STATES,
            },
            "jobs.html",
            "Jobs",
        ),
        (
            "/jobs/{job_id:int}",
            lambda r: views.job_detail(
                store,
                registry,
                job_id(r),
                base=d.base,
                docs_url=d.docs_url,
                sheet_link=d.sheet_link,
                lease=d.lease,
            ),
            "job.html",
            "Job",
        ),
        ("/flows", lambda r: flows.flows(store, registry, r.query_params), "flows.html", "Flows"),
        (
            "/flows/{flow_id:int}",
            lambda r: flows.flow_detail(
                store, registry, int(r.path_params["flow_id"]), lease=d.lease
            ),
            "flow.html",
            "Flow",
        ),
        ("/dead", lambda r: views.dead_letter(store, registry), "dead.html", "Dead letter"),
        ("/schedules", lambda r: views.schedules(store, registry), "schedules.html", "Schedules"),
        ("/outbox", lambda r: views.outbox(store), "outbox.html", "Outbox"),
        ("/workers", lambda r: workers.workers(store), "workers.html", "Workers"),
        ("/sheets", lambda r: views.sheets(registry), "sheets.html", "Sheets"),
    ]
    routes: list[Route | Mount] = []
    for path, builder, template, title in pages:
        html, api = guarded(builder, template, title)
        routes.append(Route(path, html, methods=["GET"]))
        routes.append(Route("/api" + ("/overview" if path == "/" else path), api, methods=["GET"]))
    routes += [
        Route("/metrics", metrics_endpoint(workers.MetricsCache(store, registry)), methods=["GET"]),
        Route("/events", events_endpoint(d), methods=["GET"]),
        Route("/actions/jobs", action_endpoint(d, job_action), methods=["POST"]),
        Route("/actions/queues", action_endpoint(d, queue_action), methods=["POST"]),
        Route("/actions/outbox", action_endpoint(d, outbox_action), methods=["POST"]),
        Route("/actions/flows", action_endpoint(d, flow_action), methods=["POST"]),
        Route("/actions/dead", action_endpoint(d, dead_action, "groups"), methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return routes


def metrics_endpoint(cache: workers.MetricsCache) -> Callable[[Request], Awaitable[Response]]:
    """``/metrics``: the store's gauges as Prometheus text, read at most once per the
    cache's interval. Behind the same credentials as every page; allowed read-only."""

    async def endpoint(request: Request) -> Response:
        try:
            text = await run_in_threadpool(cache.text)
        except JobdefError as exc:
            return Response(f"# {exc.message}\n", status_code=503, media_type="text/plain")
        return Response(text, media_type=workers.METRICS_CONTENT_TYPE)

    return endpoint
