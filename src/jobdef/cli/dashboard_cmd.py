"""``jobdef dashboard``: serve the web dashboard of the job store (``jobdef[dashboard]``).

On a host other than loopback it refuses to start unless authentication is set
in the environment: ``JOBDEF_DASHBOARD_USER`` with ``JOBDEF_DASHBOARD_PASSWORD_FILE``
(HTTP basic), or ``JOBDEF_DASHBOARD_TOKEN`` (bearer).
"""

from __future__ import annotations

import argparse
import logging
import sys

from jobdef.cli import runtime_options
from jobdef.cli.lease_option import add_lease, lease_from
from jobdef.cli.options import plain, whole_number
from jobdef.errors import UsageError
from jobdef.policy.leases import DEFAULT_LEASE

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8484


def run(args: argparse.Namespace) -> int:
    from jobdef.dashboard.security import auth_from_env, check_exposure

    lease = lease_from(args)
    auth = auth_from_env()
    check_exposure(args.host, auth)
    try:
        import uvicorn

        from jobdef.dashboard.app import create_app
    except ImportError as exc:
        raise UsageError(
            f"the dashboard needs {exc.name}, which is not installed; "
            "run: pip install 'jobdef[dashboard]'"
        ) from None
    config = runtime_options.config(args)
    app = create_app(
        config.database,
        config.sheets,
        auth,
        read_only=args.read_only,
        docs_url=args.docs_url,
        sheet_link=args.sheet_link,
        lease=DEFAULT_LEASE if lease is None else lease,
    )
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    mode = " (read-only)" if args.read_only else ""
    who = "anyone on this machine" if auth is None else repr(auth)
    print(f"jobdef dashboard{mode} on http://{args.host}:{args.port}/ for {who}", file=sys.stderr)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        timeout_graceful_shutdown=2,
    )
    return 0


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
        default=DEFAULT_HOST,
        help=f"address to listen on (default: {DEFAULT_HOST}; any other needs auth)",
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
    add_lease(parser, "a lost attempt's planned bounds on a job's page allow for it")
    parser.set_defaults(handler=run)
