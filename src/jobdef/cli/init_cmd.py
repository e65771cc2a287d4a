"""``jobdef init``: set up a project to use jobdef, offline, without touching what exists.

It writes ``[tool.jobdef]`` into pyproject.toml (appended, or a new file), a sheets
folder with a Defaults and a Channel example, the project's copy of the schema
(:data:`~jobdef.sheets.local_schema.LOCAL_SCHEMA`), a pre-commit configuration, a CI
workflow and the VS Code setting that maps the sheets to that schema. A file that
exists is left as it is and said so; every path written is relative to the project.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tomllib
from pathlib import Path, PurePosixPath

from jobdef.cli import EXIT_OK
from jobdef.cli.options import add_lang
from jobdef.errors import UsageError
from jobdef.render.escape import visible
from jobdef.sheets.files import read_regular, write_atomic
from jobdef.sheets.local_schema import LOCAL_SCHEMA

# What a sheets folder may be called here: it goes into TOML, YAML and glob patterns as is.
_FOLDER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*")

_TEXT = {
    "en": {
        "defaults_head": "Team-wide defaults: every Job in this folder inherits each field it "
        "leaves out.",
        "owner": "our-team",
        "channel_head": "Notification channels that sheets name in `notify.channel`. Secrets "
        "never live here: a channel names the environment variable that holds one.",
        "channel_description": "The operations team's log alerts",
        "webhook_example": "A chat webhook, once you have one (the URL stays in the environment):",
        "webhook_description": "The operations team's chat",
        "runtime_example": "On Celery (or RQ) through jobdef's adapters, what every job "
        "accepts that it cannot honour exactly (`jobdef check --runtime celery` lists them):",
    },
    "ja": {
        "defaults_head": "チーム共通の既定値: このフォルダの Job は、"
        "書かなかった項目をここから継承する。",
        "owner": "our-team",
        "channel_head": "シートの notify.channel が指す通知チャネル。秘密はここに書かない"
        "（チャネルは秘密を持つ環境変数の名前を書く）。",
        "channel_description": "運用担当のログ通知",
        "webhook_example": "チャットの Webhook を使うとき（URL は環境変数に置く）:",
        "webhook_description": "運用担当のチャット",
        "runtime_example": "jobdef のアダプタで Celery（または RQ）で動かすとき、そこで正確に"
        "守れない項目のうち全ジョブで受け入れるもの（jobdef check --runtime celery が示す）:",
    },
}


def _schema_line(sheets: str) -> str:
    depth = len(PurePosixPath(sheets).parts)
    return f"# yaml-language-server: $schema={'../' * depth}{LOCAL_SCHEMA}"


def _defaults(sheets: str, lang: str) -> str:
    t = _TEXT[lang]
    return f"""{_schema_line(sheets)}
# {t["defaults_head"]}
apiVersion: jobdef/v1
kind: Defaults
name: team-defaults
owner: {t["owner"]}
queue: default
max_attempts: 3
backoff: {{strategy: exponential, initial: 10s, multiplier: 2, max: 10m, jitter: full}}
timeout: 60s
errors: {{default: retry}}
on_reclaim: retry
notify: {{channel: ops-log, events: [dead]}}
rerun: jobdef requeue --job {{name}} --state dead
retention: {{done: 30d, dead: until_resolved}}
# {t["runtime_example"]}
# runtime: {{celery: {{accept: [retention.done]}}}}
"""


def _channels(sheets: str, lang: str) -> str:
    t = _TEXT[lang]
    return f"""{_schema_line(sheets)}
# {t["channel_head"]}
apiVersion: jobdef/v1
kind: Channel
name: ops-log
type: log
description: {t["channel_description"]}
# {t["webhook_example"]}
# ---
# apiVersion: jobdef/v1
# kind: Channel
# name: ops-chat
# type: webhook
# description: {t["webhook_description"]}
# url_env: OPS_CHAT_WEBHOOK_URL
# format: slack
"""


def _tool_table(sheets: str, lang: str) -> str:
    return f"""[tool.jobdef]
sheets = "{sheets}"
database = "sqlite:///jobdef.db"
docs = "docs/jobs"
lang = "{lang}"
# On Celery or RQ: the app that jobdef requeue, check --runtime and dashboard send through
# celery_app = "shop.celery:app"   # as celery -A takes it
# rq_app = "shop.jobs:sheets"      # the jobdef.adapters.rq.SheetQueue
"""


def _precommit(sheets: str) -> str:
    files = f"^{sheets}/.*\\.ya?ml$"
    return f"""# Checks run before each commit (https://pre-commit.com): pip install pre-commit,
# then pre-commit install. They run the jobdef installed in this project's environment.
repos:
  - repo: local
    hooks:
      - id: jobdef-validate
        name: jobdef validate
        entry: jobdef validate --strict
        language: system
        files: {files}
        pass_filenames: false
      - id: jobdef-docs-check
        name: jobdef docs are up to date
        entry: jobdef docs --check
        language: system
        files: ^({sheets}/.*\\.ya?ml|docs/jobs/.*)$
        pass_filenames: false
"""


def _ci_workflow(install: str) -> str:
    pin = (
        " (no release yet: put a commit id in place of @main)" if install.endswith('@main"') else ""
    )
    return f"""\
# Checks the sheets and the generated docs on every push and pull request; findings
# show as annotations on the changed lines, and in code scanning from the SARIF file.
name: jobdef
on: [push, pull_request]
permissions:
  contents: read
  security-events: write
jobs:
  sheets:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      # The jobdef that wrote this file{pin}; or `pip install .` when your project depends on it.
      - run: pip install {install}
      - run: jobdef validate --strict --format github
      - run: jobdef docs --check
      - run: jobdef validate --format sarif > jobdef.sarif || true
        if: always()
      - uses: github/codeql-action/upload-sarif@v3
        if: always()
        with:
          sarif_file: jobdef.sarif
"""


# Where jobdef's source is published, for an install before (or between) releases.
SOURCE = "https://github.com/jobdef/jobdef"


def install_requirement() -> str:
    """What `pip install` takes to get the jobdef running now, quoted for a shell: the
    release (``jobdef==X.Y.Z``), the commit of a git install, else the source's main
    branch: an unreleased version is on no package index, so ``jobdef`` alone fails."""
    from importlib import metadata

    try:
        dist = metadata.distribution("jobdef")
    except metadata.PackageNotFoundError:
        return f'"jobdef @ git+{SOURCE}@main"'
    version = dist.version
    if re.fullmatch(r"\d+(\.\d+)*", version):
        return f'"jobdef=={version}"'
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        direct = {}
    vcs = direct.get("vcs_info") if isinstance(direct, dict) else None
    url = direct.get("url") if isinstance(direct, dict) else None
    if (
        isinstance(vcs, dict)
        and vcs.get("vcs") == "git"
        and isinstance(url, str)
        and re.fullmatch(r"https://[\w.-]+/[\w./-]+", url)
        and re.fullmatch(r"[0-9a-f]{40}", str(vcs.get("commit_id", "")))
    ):
        return f'"jobdef @ git+{url}@{vcs["commit_id"]}"'
    return f'"jobdef @ git+{SOURCE}@main"'


# The files a job database on SQLite is made of (the file, its WAL and shared memory),
# and the SARIF report the workflow writes: never committed.
GITIGNORE = ("jobdef.db", "jobdef.db-*", "jobdef.sarif")


def _gitignore(writer: _Writer) -> None:
    """``.gitignore``: written, or the missing patterns appended to the one there."""
    path = writer.root / ".gitignore"
    try:
        existing = read_regular(path).decode("utf-8")
    except FileNotFoundError:
        writer.write(
            ".gitignore",
            "# jobdef's SQLite job database and reports\n" + "\n".join(GITIGNORE) + "\n",
        )
        return
    except (OSError, UnicodeDecodeError):
        writer.lines.append(f"kept .gitignore (not a plain text file): add {' '.join(GITIGNORE)}")
        return
    present = {line.strip() for line in existing.splitlines()}
    missing = [pattern for pattern in GITIGNORE if pattern not in present]
    if not missing:
        writer.lines.append("kept .gitignore (it ignores the job database already)")
        return
    text = existing + ("" if existing.endswith("\n") or not existing else "\n")
    writer.write(".gitignore", text + "\n".join(missing) + "\n", replace=True)


def _vscode(sheets: str, existing: str | None) -> str | None:
    """.vscode/settings.json with ``yaml.schemas`` mapping the sheets to the local copy;
    None when the existing file is not plain JSON (VS Code allows comments: not ours
    to rewrite)."""
    settings: dict[str, object] = {}
    if existing is not None:
        try:
            loaded = json.loads(existing)
        except ValueError:
            return None
        if not isinstance(loaded, dict):
            return None
        settings = loaded
    schemas = settings.get("yaml.schemas")
    if not isinstance(schemas, dict):
        schemas = {}
    schemas[f"./{LOCAL_SCHEMA}"] = [f"{sheets}/*.yaml", f"{sheets}/*.yml"]
    settings["yaml.schemas"] = schemas
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


class _Writer:
    """Writes files under ``root``, never over an existing one, and says what it did."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lines: list[str] = []

    def write(self, relative: str, text: str, *, replace: bool = False) -> None:
        target = self.root / relative
        existed = os.path.lexists(target)
        if existed and not replace:
            self.lines.append(f"kept {relative} (it exists)")
            return
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, text.encode("utf-8"), replace=replace)
        except FileExistsError:
            self.lines.append(f"kept {relative} (it exists)")
            return
        except OSError as exc:
            raise UsageError(
                f"cannot write {relative}: {exc.strerror or exc}; run jobdef init in a folder "
                "you can write to"
            ) from None
        self.lines.append(f"{'updated' if existed else 'wrote'} {relative}")


def _pyproject(writer: _Writer, sheets: str, lang: str) -> None:
    path = writer.root / "pyproject.toml"
    if not path.exists():
        writer.write("pyproject.toml", _tool_table(sheets, lang))
        return
    try:
        text = read_regular(path).decode("utf-8")  # not through a symlink, not a FIFO
        tool = tomllib.loads(text).get("tool", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(
            f"cannot read pyproject.toml: {exc}; fix it, then run jobdef init again"
        ) from None
    if "jobdef" in tool:
        writer.lines.append("kept [tool.jobdef] of pyproject.toml (it exists)")
        return
    separator = (
        "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    )
    writer.write("pyproject.toml", text + separator + _tool_table(sheets, lang), replace=True)
    writer.lines[-1] = "added [tool.jobdef] to pyproject.toml"


def run(args: argparse.Namespace) -> int:
    from jobdef.sheets.schema_check import schema_text

    root = Path(args.path)
    if not root.is_dir():
        raise UsageError(f"{args.path} is not a folder; create it first or run jobdef init in it")
    sheets = PurePosixPath(args.sheets)
    if (
        not _FOLDER.fullmatch(args.sheets)
        or sheets.is_absolute()
        or ".." in sheets.parts
        or not sheets.parts
    ):
        raise UsageError(
            f"--sheets {visible(args.sheets[:80])!r} must be a folder inside the project, "
            "written with letters, digits, '_', '-', '.' and '/', such as jobdefs"
        )
    folder = sheets.as_posix()
    lang = args.lang or "en"
    writer = _Writer(root)
    _pyproject(writer, folder, lang)
    writer.write(f"{folder}/defaults.yaml", _defaults(folder, lang))
    writer.write(f"{folder}/channels.yaml", _channels(folder, lang))
    writer.write(LOCAL_SCHEMA, schema_text(), replace=True)
    writer.write(".pre-commit-config.yaml", _precommit(folder))
    writer.write(".github/workflows/jobdef.yml", _ci_workflow(install_requirement()))
    _gitignore(writer)
    settings = root / ".vscode" / "settings.json"
    try:
        existing: str | None = read_regular(settings).decode("utf-8")
    except FileNotFoundError:
        existing = None
    except (OSError, UnicodeDecodeError):
        existing = "not plain JSON"  # a symlink, a FIFO: kept, and said so
    merged = _vscode(folder, existing)
    if merged is None:
        writer.lines.append(
            f'kept .vscode/settings.json (not plain JSON): add "yaml.schemas": '
            f'{{"./{LOCAL_SCHEMA}": ["{folder}/*.yaml"]}} yourself'
        )
    elif merged != existing:
        writer.write(".vscode/settings.json", merged, replace=existing is not None)
    else:
        writer.lines.append("kept .vscode/settings.json (it maps the sheets already)")
    print("\n".join(writer.lines))
    print(
        "next: jobdef new my_first_job (a sheet with every field explained), "
        f"jobdef validate, jobdef docs; the guide: {SOURCE}/blob/main/docs/quickstart.md"
    )
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "init",
        help="set up a project: [tool.jobdef], example sheets, the schema for editors, hooks",
        description="Set up a project to use jobdef: [tool.jobdef] in pyproject.toml, a "
        "sheets folder with a Defaults and a Channel example, a copy of the schema at "
        f"{LOCAL_SCHEMA} for editors, .pre-commit-config.yaml, a GitHub Actions workflow "
        "and .vscode/settings.json mapping the sheets to the schema. Works offline; a file "
        "that exists is kept (the schema copy is refreshed).",
    )
    parser.add_argument(
        "path",
        nargs="?",
        default=".",
        metavar="DIR",
        help="the project folder (default: the working directory)",
    )
    parser.add_argument(
        "--sheets",
        default="jobdefs",
        metavar="DIR",
        help="the sheets folder to create, relative to the project (default: jobdefs)",
    )
    add_lang(parser)
    parser.set_defaults(handler=run)
