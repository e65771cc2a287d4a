"""``jobdef check --runtime celery|rq``: how faithfully a runtime honours every sheet.

For each job: a table of its fields, each ``exact``, ``approximate (how)`` or
``unsupported (why)`` on that runtime through jobdef's adapter, and whether the
sheet accepts it (``runtime: {celery: {accept: [field, ...]}}``). With ``--app``
the live infrastructure is checked too (see :mod:`jobdef.adapters.infra`): for
Celery, the app loaded as ``celery -A`` loads it, a task per sheet, no Celery retry
setting left on a sheet task, and a running worker consuming every sheet's queue.
Exit 1 when a job uses a field the runtime cannot honour exactly and its sheet
does not accept it, or when the infrastructure falls short of the sheets (each
finding is one ``infrastructure:`` line).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from jobdef.cli import EXIT_FINDINGS, EXIT_OK
from jobdef.cli.options import add_sheets, config_from, registry_from
from jobdef.render.escape import visible
from jobdef.sheets.files import shown_path


def run(args: argparse.Namespace) -> int:
    from jobdef.adapters.fidelity import unaccepted, verdicts

    registry = registry_from(config_from(args))
    jobs = list(registry)
    report: list[dict[str, Any]] = []
    failing = 0
    for job in jobs:
        found = verdicts(args.runtime, job)
        refused = {v.field for v in unaccepted(args.runtime, job, found)}
        accepted = set(getattr(job.runtime, args.runtime).accept)
        failing += bool(refused)
        report.append(
            {
                "job": job.name,
                "sheet": job.file,
                "fields": [
                    {
                        "field": v.field,
                        "fidelity": v.level,
                        "how": v.how,
                        "accepted": v.field in accepted,
                    }
                    for v in found
                ],
                "unaccepted": sorted(refused),
                "from_defaults": _from_defaults(job, refused),
            }
        )
    problems = _infrastructure(args, jobs)
    if args.format == "json":
        data = {"runtime": args.runtime, "jobs": report, "infrastructure": problems}
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        _print_text(args.runtime, report, problems, checked=args.app is not None)
    return EXIT_FINDINGS if failing or problems else EXIT_OK


def _from_defaults(job: Any, fields: set[str]) -> dict[str, str]:
    """Of ``fields``, those whose value ``job`` takes from a Defaults document, and
    where (``file:line``): accepting them there holds for every job."""
    found = {}
    for field in sorted(fields):
        origin = job.origin(field)
        if origin is not None and origin.source == "defaults":
            found[field] = f"{shown_path(origin.file)}:{origin.line}"
    return found


def _infrastructure(args: argparse.Namespace, jobs: list[Any]) -> list[str]:
    if args.app is None:
        return []
    from jobdef.adapters import infra

    target = infra.load_object(args.app)
    if args.runtime == "celery":
        return infra.celery_problems(target, jobs, args.app)
    return infra.rq_problems(target, jobs)


def _print_text(
    runtime: str, report: list[dict[str, Any]], problems: list[str], *, checked: bool
) -> None:
    for entry in report:
        print(f"{visible(entry['job'])} on {runtime} ({visible(shown_path(entry['sheet']))})")
        width = max(len(f["field"]) for f in entry["fields"])
        for f in entry["fields"]:
            text = f["fidelity"] if f["fidelity"] == "exact" else f"{f['fidelity']} ({f['how']})"
            mark = ""
            if f["fidelity"] != "exact":
                mark = "  accepted" if f["accepted"] else "  NOT ACCEPTED"
            print(f"  {f['field']:<{width}}  {text}{mark}")
        if entry["unaccepted"]:
            _print_advice(runtime, entry["unaccepted"], entry["from_defaults"])
        print()
    if not checked:
        print("infrastructure: not checked; pass --app module:app to check it")
    elif problems:
        for problem in problems:
            print(f"infrastructure: {visible(problem)}")
    else:
        print("infrastructure: ok")
    failing = sum(1 for e in report if e["unaccepted"])
    print(f"{len(report)} job(s) checked on {runtime}: {failing} with fields not accepted")


def _print_advice(runtime: str, refused: list[str], inherited: dict[str, str]) -> None:
    """What to write for the fields of one job the runtime cannot honour exactly: in the
    sheet for its own, in the Defaults for those it inherits (for every job at once)."""
    own = [field for field in refused if field not in inherited]
    if own:
        fields = ", ".join(own)
        print(
            f"  -> {runtime} cannot honour {fields} exactly: change the sheet, or accept "
            f"it there: runtime: {{{runtime}: {{accept: [{fields}]}}}}"
        )
    by_file: dict[str, list[str]] = {}
    for field, where in inherited.items():
        by_file.setdefault(where.rpartition(":")[0], []).append(field)
    for fields_of in by_file.values():
        fields = ", ".join(fields_of)
        where = ", ".join(visible(inherited[f]) for f in fields_of)
        print(
            f"  -> {runtime} cannot honour {fields} exactly, set in the Defaults "
            f"({where}): accept it there, for every job: "
            f"runtime: {{{runtime}: {{accept: [{fields}]}}}}"
        )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "check",
        help="show how faithfully Celery or RQ honours each sheet (and check its setup)",
        description="For each job: a table of its fields, each exact, approximate (how) or "
        "unsupported (why) on the runtime through jobdef's adapter, and whether the sheet "
        "accepts it (runtime: {celery: {accept: [field, ...]}}). With --app the live "
        "infrastructure is checked too. Exit 1 when a job uses a field the runtime cannot "
        "honour exactly and its sheet does not accept it, or when the infrastructure falls "
        "short of the sheets.",
    )
    parser.add_argument(
        "--runtime",
        required=True,
        choices=("celery", "rq"),
        help="the runtime the jobs run on through jobdef's adapter (required)",
    )
    parser.add_argument(
        "--app",
        metavar="APP",
        help="also check the live infrastructure: a Celery app configured with "
        "jobdef.adapters.celery.configure, named as celery -A names it (module:app, "
        "module.app or module; its include, imports and autodiscovered tasks loaded), "
        "or a jobdef.adapters.rq.SheetQueue as module:obj (default: not checked)",
    )
    add_sheets(parser)
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    parser.set_defaults(handler=run)
