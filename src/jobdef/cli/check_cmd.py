"""``jobdef check --runtime celery|rq``: how faithfully a runtime honours every sheet.

For each job: a table of its fields, each ``exact``, ``approximate (how)`` or
``unsupported (why)`` on that runtime through jobdef's adapter, and whether the
sheet accepts it (``runtime: {celery: {accept: [field, ...]}}``). With ``--app``
(default: ``[tool.jobdef] celery_app`` or ``rq_app``; ``--no-app`` for none) the live
infrastructure is checked too (see :mod:`jobdef.adapters.infra`): for
Celery, the app loaded as ``celery -A`` loads it, a task per sheet, no Celery retry
setting left on a sheet task, and a running worker consuming every sheet's queue.
Each workflow gets one line: a flow runs only on jobdef's worker, and the line says
what the runtime's own ordering (a Celery canvas, RQ's ``depends_on``) would keep of
it and what not; it never fails the check (``jobdef validate`` refuses a step whose
job that runtime runs, JD372). Exit 1 when a job uses a field the runtime cannot
honour exactly and its sheet does not accept it, or when the infrastructure falls
short of the sheets (each finding is one ``infrastructure:`` line).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from jobdef.cli import EXIT_FINDINGS, EXIT_OK
from jobdef.cli.options import add_sheets, config_from, registry_from
from jobdef.project import Config
from jobdef.render.escape import visible
from jobdef.sheets.files import shown_path


def run(args: argparse.Namespace) -> int:
    from jobdef.adapters.fidelity import flow_line, unaccepted, verdicts

    config = config_from(args)
    registry = registry_from(config)
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
    flows = [
        {
            "workflow": flow.name,
            "sheet": flow.file,
            "text": flow_line(
                args.runtime,
                flow.name,
                (registry.jobs[s.job].queue for s in flow.steps.values() if s.job in registry.jobs),
            ),
        }
        for flow in (registry.workflows[name] for name in sorted(registry.workflows))
    ]
    named = None if args.no_app else _named_app(args, config)
    problems = [] if named is None else _infrastructure(args.runtime, jobs, named, config)
    if args.format == "json":
        data = {
            "runtime": args.runtime,
            "jobs": report,
            "workflows": flows,
            "infrastructure": problems,
        }
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        _print_text(args.runtime, report, flows, problems, checked=named is not None)
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


def _named_app(args: argparse.Namespace, config: Config) -> tuple[str, str] | None:
    """``(spec, where it is written)`` of the application object to check: ``--app``,
    else ``[tool.jobdef] celery_app`` or ``rq_app`` (the runtime's); None for neither."""
    from jobdef.adapters.requeue import Targets

    return Targets(args.app, config).named(args.runtime)


def _infrastructure(
    runtime: str, jobs: list[Any], named: tuple[str, str], config: Config
) -> list[str]:
    from jobdef.adapters import infra
    from jobdef.project import use_pythonpath

    spec, option = named
    use_pythonpath(config)  # the project's folder, wherever the command runs
    target = infra.load_object(spec, option)
    if runtime == "celery":
        return infra.celery_problems(target, jobs, spec)
    return infra.rq_problems(target, jobs)


def _print_text(
    runtime: str,
    report: list[dict[str, Any]],
    flows: list[dict[str, str]],
    problems: list[str],
    *,
    checked: bool,
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
    for flow in flows:
        print(
            f"workflow {visible(flow['workflow'])} ({visible(shown_path(flow['sheet']))}): "
            f"{visible(flow['text'])}"
        )
    if not checked:
        from jobdef.adapters.requeue import APP_KEYS, APP_OBJECTS

        form = APP_OBJECTS[runtime][0]
        print(
            f"infrastructure: not checked; pass --app {form} to check it, or name it once "
            f'in pyproject.toml: [tool.jobdef] {APP_KEYS[runtime]} = "{form}"'
        )
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
        "infrastructure is checked too. Each workflow gets one line: it runs only on "
        "jobdef's worker, and what the runtime's own ordering would keep of it. Exit 1 "
        "when a job uses a field the runtime cannot "
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
        "or a jobdef.adapters.rq.SheetQueue as module:obj (default: [tool.jobdef] "
        "celery_app or rq_app, JOBDEF_CELERY_APP or JOBDEF_RQ_APP; else not checked)",
    )
    parser.add_argument(
        "--no-app",
        action="store_true",
        help="check the sheets only, not the infrastructure, even when [tool.jobdef] names "
        "the app (default: checked when an app is named)",
    )
    add_sheets(parser)
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    parser.set_defaults(handler=run)
