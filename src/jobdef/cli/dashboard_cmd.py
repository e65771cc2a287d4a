"""``jobdef dashboard``: serve the web dashboard of the job store (``jobdef[dashboard]``).

On a host other than loopback it refuses to start unless authentication is set
in the environment: ``JOBDEF_DASHBOARD_USER`` with ``JOBDEF_DASHBOARD_PASSWORD_FILE``
(HTTP basic), or ``JOBDEF_DASHBOARD_TOKEN`` (bearer). It answers only requests
whose Host is a loopback name, the --host it listens on, or an --allowed-host.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys

from jobdef.cli import runtime_options
from jobdef.cli.lease_option import add_lease, lease_from
from jobdef.cli.options import plain, whole_number
from jobdef.errors import UsageError
from jobdef.policy.leases import DEFAULT_LEASE
from jobdef.project import Config

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8484
# The most of a request's headers the server reads. A page on another port of the same
# host can fill the browser's cookie jar for it (Chromium keeps about 170 cookies of
# 4 KB), which the browser then sends with every request: about 680 KB. uvicorn's
# default (16 KB) would answer each of the operator's requests "Invalid HTTP request".
MAX_HEADER_BYTES = 1 << 20


def run(args: argparse.Namespace) -> int:
    from jobdef.dashboard.security import auth_from_env, check_exposure

    lease = lease_from(args)
    auth = auth_from_env()
    host = args.host or DEFAULT_HOST
    check_exposure(host, auth)
    try:
        import uvicorn

        from jobdef.dashboard.app import create_app
        from jobdef.dashboard.serving import Limits, RequestSignals, protocol_class
    except ImportError as exc:
        raise UsageError(
            f"the dashboard needs {exc.name}, which is not installed; "
            "run: pip install 'jobdef[dashboard]'"
        ) from None
    config = runtime_options.config(args)
    allowed = list(args.allowed_host)
    if args.host is not None and not _unspecified(host):
        allowed.append(host)  # the address it was told to listen on is a name it answers
    app = create_app(
        config.database,
        config.sheets,
        auth,
        read_only=args.read_only,
        docs_url=args.docs_url,
        sheet_link=args.sheet_link,
        lease=DEFAULT_LEASE if lease is None else lease,
        allowed_hosts=allowed,
        runtime_app=_runtime_app(args.app, config),
    )
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    mode = " (read-only)" if args.read_only else ""
    who = "anyone on this machine" if auth is None else repr(auth)
    print(f"jobdef dashboard{mode} on http://{host}:{args.port}/ for {who}", file=sys.stderr)
    if _unspecified(host) and not args.allowed_host:
        print(
            f"jobdef dashboard: it answers only http://localhost:{args.port}/ and the loopback "
            "addresses; add --allowed-host NAME for each name it is reached by",
            file=sys.stderr,
        )
    limits = Limits()
    # Connections are bounded by the protocol class, which closes the longest waiting
    # one to make room: uvicorn's limit_concurrency would answer the operator's request
    # 503 while the idle connections that take the slots stay open.
    uvicorn.run(
        RequestSignals(app),
        host=host,
        port=args.port,
        http=protocol_class(limits),
        backlog=limits.backlog,
        ws="none",  # no WebSocket: an upgraded connection would leave the guard
        log_level="warning",
        timeout_graceful_shutdown=2,
        timeout_keep_alive=int(limits.head_timeout),
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
    )
    return 0


def _runtime_app(spec: str | None, config: Config) -> object:
    """The application objects jobs that died in Celery or RQ go back through: ``--app``,
    else ``[tool.jobdef] celery_app`` and ``rq_app``; loaded now, so one that does not
    load stops the dashboard at start (as ``jobdef requeue`` loads them)."""
    from jobdef.adapters.requeue import Targets

    return Targets(spec, config).load()


def _unspecified(host: str) -> bool:
    """Whether ``host`` is every address (``0.0.0.0``, ``::``): no name a client sends."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "dashboard",
        help="serve the web dashboard: queues, jobs, plan vs actual, actions",
        description=plain(__doc__),
    )
    runtime_options.add_db(parser)
    runtime_options.add_sheets(parser)
    parser.add_argument(
        "--host",
        help=f"address to listen on (default: {DEFAULT_HOST}; any other needs auth)",
    )
    parser.add_argument(
        "--allowed-host",
        metavar="NAME",
        action="append",
        default=[],
        help="a name the dashboard is reached by (repeatable): requests whose Host is not "
        "a loopback name, the --host or one of these are refused, against DNS rebinding; "
        ".example.com for a domain and its subdomains (default: none)",
    )
    parser.add_argument(
        "--port",
        type=whole_number(1, 65535),
        default=DEFAULT_PORT,
        help=f"port (default: {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="hide the actions and refuse every POST (default: actions on)",
    )
    parser.add_argument(
        "--docs-url",
        metavar="URL",
        help="where the `jobdef docs` pages are served, to link each job to its page "
        "(default: no link)",
    )
    parser.add_argument(
        "--sheet-link",
        metavar="TEMPLATE",
        help="link for a sheet value, with {file} and {line}, e.g. "
        "https://git.example.com/app/blob/main/{file}#L{line} (default: no link)",
    )
    parser.add_argument(
        "--app",
        metavar="MODULE:OBJ",
        help="requeue jobs that died in Celery or RQ back through it: the Celery app, or the "
        "jobdef.adapters.rq.SheetQueue (default: [tool.jobdef] celery_app or rq_app, "
        "JOBDEF_CELERY_APP or JOBDEF_RQ_APP; else such jobs are not requeued, the result "
        "says so)",
    )
    add_lease(parser, "a lost attempt's planned bounds on a job's page allow for it")
    parser.set_defaults(handler=run)
