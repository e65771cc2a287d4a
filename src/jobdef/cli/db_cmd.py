"""``jobdef db``: create the job database's tables or migrate them, or say where they stand.

``jobdef db upgrade`` creates the jobdef tables in a database that has none
(an application's own database is fine: every table is prefixed ``jobdef_``)
or applies the migrations it lacks, each in one transaction, and says which.
``jobdef db status`` shows the version applied, the newest this jobdef ships
and the migrations still to apply; it changes nothing.
"""

from __future__ import annotations

import argparse

from jobdef.cli import runtime_options
from jobdef.cli.options import plain


def upgrade(args: argparse.Namespace) -> int:
    from jobdef.backends import redact
    from jobdef.backends import upgrade as upgrade_store

    url = runtime_options.config(args).database
    before, after = upgrade_store(url)
    if before == 0:
        done = f"created tables at version {after}"
    elif before < after:
        done = f"upgraded {before} -> {after}"
    else:
        done = f"already at version {after}"
    print(f"job database {redact(url)}: {done}")
    return 0


def status(args: argparse.Namespace) -> int:
    from jobdef.backends import redact, schema_status

    url = runtime_options.config(args).database
    schema = schema_status(url)
    current = f"{schema.current} (no jobdef tables)" if schema.current == 0 else schema.current
    print(f"job database {redact(url)}")
    print(f"current version: {current}")
    print(f"latest version: {schema.latest}")
    if not schema.pending:
        print("pending migrations: none")
        return 0
    print("pending migrations (`jobdef db upgrade` applies them):")
    for _, name in schema.pending:
        print(f"  {name.removesuffix('.sql')}")
    return 0


ACTIONS = {"upgrade": upgrade, "status": status}


def run(args: argparse.Namespace) -> int:
    return ACTIONS[args.action](args)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("db", help="manage the job database", description=plain(__doc__))
    parser.add_argument(
        "action",
        choices=list(ACTIONS),
        help="upgrade: create the tables or apply new migrations; "
        "status: current and latest version, pending migrations",
    )
    runtime_options.add_db(parser)
    parser.set_defaults(handler=run)
