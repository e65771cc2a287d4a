"""The jobdef dashboard under a URL of a Django project, for its staff.

In ``asgi.py``::

    from django.core.asgi import get_asgi_application
    from jobdef.contrib.django.dashboard import with_dashboard

    application = with_dashboard(get_asgi_application(), prefix="/jobs")

Requests under ``prefix`` go to the dashboard (``jobdef.dashboard.create_app``) of the
project's ``JobdefBackend``: its database and its sheets. Only a logged-in, active staff
user of Django's session gets in (others are sent to the admin's login page); the
dashboard's actions are logged with that user's name. A request whose Host Django
would refuse (not in the project's ``ALLOWED_HOSTS``, nor in ``allowed_hosts``) is
refused before any of that. Everything else goes to Django.
Needs ``jobdef[dashboard]`` and an ASGI server (``uvicorn project.asgi:application``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from http.cookies import SimpleCookie
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

from jobdef.policy.leases import DEFAULT_LEASE

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
ASGI = Callable[[Scope, Receive, Send], Awaitable[None]]


def staff_name(session_key: str | None) -> str | None:
    """The username of the active staff user whose Django session this is, or None."""
    if not session_key:
        return None
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import get_user

    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user = get_user(SimpleNamespace(session=store))  # checks the session's auth hash too
    if not (user.is_authenticated and user.is_active and user.is_staff):
        return None
    return str(user.get_username())


def with_dashboard(
    django_app: ASGI,
    prefix: str = "/jobs",
    *,
    read_only: bool = False,
    backend: str | None = None,
    lease: float = DEFAULT_LEASE,
    allowed_hosts: Iterable[str] = (),
) -> ASGI:
    """``django_app`` with the dashboard of the ``JobdefBackend`` ``backend`` (the first
    one of ``TASKS`` by default) under ``prefix``, for Django's staff. ``lease``: the
    workers' lease in seconds (``manage.py jobdef_worker --lease``), which a lost
    attempt's planned bounds allow for. ``allowed_hosts``: host names the dashboard
    answers beside the project's ``ALLOWED_HOSTS``, written the same way."""
    prefix = "/" + prefix.strip("/")
    extra = [allowed_hosts] if isinstance(allowed_hosts, str) else list(allowed_hosts)
    made: list[Any] = []
    lock = asyncio.Lock()

    async def dashboard() -> Any:
        async with lock:
            if not made:
                from asgiref.sync import sync_to_async

                made.append(
                    await sync_to_async(_create, thread_sensitive=False)(backend, read_only, lease)
                )
            return made[0]

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        inside = path == prefix or path.startswith(prefix + "/")
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)  # Django's handler refuses lifespan
            return
        if not inside:
            await django_app(scope, receive, send)
            return
        if scope["type"] != "http":
            await _respond(send, 404, b"not found\n")
            return
        refused = _host_refusal(_header(scope, b"host"), extra)
        if refused is not None:
            # Before the session is looked up: a page that rebound its name here learns
            # nothing, not even where the login is.
            await _respond(send, 400, (refused + "\n").encode())
            return
        from asgiref.sync import sync_to_async

        who = await sync_to_async(staff_name)(_session_key(scope))
        if who is None:
            await _to_login(scope, send)
            return
        inner = dict(scope, root_path=scope.get("root_path", "") + prefix, jobdef_who=who)
        await (await dashboard())(inner, receive, send)

    return app


def _host_refusal(host: str | None, extra: list[str]) -> str | None:
    """Why Django would refuse ``host`` (by its own rules: the project's ALLOWED_HOSTS,
    or what it allows with DEBUG and none set), or None when it is allowed."""
    from django.conf import settings
    from django.http.request import split_domain_port, validate_host

    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    domain, _ = split_domain_port(host or "")
    if domain and validate_host(domain, [*allowed, *extra]):
        return None
    shown = repr(domain[:60] or (host or "")[:60])
    return (
        f"host {shown} is not in the project's ALLOWED_HOSTS; if it is this site's name, "
        "add it there (or to allowed_hosts= of with_dashboard)"
    )


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _create(alias: str | None, read_only: bool, lease: float) -> Any:
    from jobdef.contrib.django.worker import project_backend
    from jobdef.dashboard import create_app

    found = project_backend(alias)
    if found is None:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured("TASKS has no jobdef.contrib.django.JobdefBackend")
    # Every request's Host was checked by Django's rules before it got here (settings
    # read at each request, as Django reads them): the app checks none of its own.
    return create_app(
        found.database_url,
        found.sheets,
        read_only=read_only,
        lease=lease,
        allowed_hosts="*",
        secret=csrf_secret(),
    )


def csrf_secret() -> bytes:
    """The key of the dashboard's CSRF tokens: derived from the project's ``SECRET_KEY``,
    so every process of the project (gunicorn's or uvicorn's workers, replicas) takes
    the forms another one served, and a new ``SECRET_KEY`` voids them as it voids the
    sessions."""
    from django.utils.crypto import salted_hmac

    key: bytes = salted_hmac("jobdef.contrib.django.dashboard", "csrf", algorithm="sha256").digest()
    return key


def _session_key(scope: Scope) -> str | None:
    from django.conf import settings

    cookies = SimpleCookie()
    for name, value in scope.get("headers", []):
        if name.lower() == b"cookie":
            try:
                cookies.load(value.decode("latin-1"))
            except Exception:  # a malformed cookie header: no session
                return None
    morsel = cookies.get(settings.SESSION_COOKIE_NAME)
    return morsel.value if morsel is not None else None


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _to_login(scope: Scope, send: Send) -> None:
    from django.conf import settings

    login = getattr(settings, "JOBDEF_DASHBOARD_LOGIN_URL", "/admin/login/")
    target = f"{login}?next={quote(scope.get('root_path', '') + scope.get('path', ''))}"
    await send(
        {
            "type": "http.response.start",
            "status": 302,
            "headers": [(b"location", target.encode("latin-1")), (b"content-length", b"0")],
        }
    )
    await send({"type": "http.response.body", "body": b""})


async def _respond(send: Send, status: int, body: bytes) -> None:
    from jobdef.dashboard.security import SECURITY_HEADERS

    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *((k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
