"""Every CLI command meets random bytes and random unicode in its arguments.

Each example runs one command in-process (``jobdef.cli.main``) in a scratch
folder of a real project (sheets, a real SQLite store holding jobs whose args
and errors are hostile text), with HOME in that project and the project's
secrets in the environment, and asserts: the exit code is 0, 1 or 2; nothing
printed holds "Traceback" or a secret; nothing appeared in the repository.

What reaches argv: a process's arguments are bytes without NUL (execve takes
C strings), which Python decodes as UTF-8 with surrogateescape. So random
bytes become ``os.fsdecode(bytes)`` (undecodable bytes are the lone surrogates
U+DC80..U+DCFF, the only ones argv can carry); random text holds any code point
but NUL and surrogates. stdout is a strict UTF-8 stream, as a terminal's is, so
printing a lone surrogate raw fails as it would there. ``jobdef worker`` and a
few representative commands run as real processes with real bytes in argv.

Paths the commands write to are kept relative and without ``..`` or ``/`` (the
tests run as whatever user CI has, root included: an absolute random path would
be written for real); hostile absolute paths are in the fixed cases.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile_project import (
    DB_PASSWORD,
    REPO,
    hostile_env,
    leaked,
    run_jobdef,
    secret_db_urls,
    tree_listing,
    write_project,
)
from jobdef.backends import open_backend
from jobdef.backends.records import ClaimOptions, ErrorInfo, NewJob
from jobdef.cli import COMMANDS, main
from jobdef.render.export import FORMATS as EXPORT_FORMATS

pytestmark = pytest.mark.slow  # real CLI processes

# --- hostile text ---------------------------------------------------------------

FIXED = [
    "",
    "-",
    "--",
    "\x1b[2J\x1b[31mowned\x1b[0m",
    "\u202efdp.exe",
    "\u2066\u2069\u200f",
    "\x9b1m",
    "\r\n",
    "%0A",
    "name\n",
    "9223372036854775807",
    "-9223372036854775808",
    "0",
    "-1",
    "1e309",
    "nan",
    "{}",
    "[]",
    '{"text": null}',
    "null",
    "*",
    "..",
    ".",
    "~",
    "$HOME",
    "{text}",
    "{{ (9**9)**(9**9) }}",
    "日本語の引数",
    "\udcff\udc80",
]
_argv_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
_piece = st.one_of(
    st.text(_argv_chars, max_size=24),
    st.binary(max_size=24).map(lambda b: os.fsdecode(b.replace(b"\x00", b""))),
    st.sampled_from(FIXED),
)
HOSTILE = st.one_of(
    _piece,
    st.lists(_piece, min_size=2, max_size=4).map("".join),
    st.tuples(st.sampled_from(["A", "日", "\x1b[", "\u202e"]), st.integers(300, 5000)).map(
        lambda t: t[0] * t[1]
    ),
)


def _relative(text: str) -> str:
    """``text`` as a path below the working folder: no '/', never '.' or '..'."""
    name = text.replace("/", "_")
    return name if name not in {"", ".", ".."} else f"x{name}"


# Paths a command may write to (kept below the scratch folder).
OUT_PATH = HOSTILE.map(_relative)
DB_URL = st.one_of(
    st.sampled_from(secret_db_urls()),
    OUT_PATH.map(lambda p: f"sqlite:///{p}"),
    HOSTILE.map(lambda h: f"postgresql://app:{DB_PASSWORD}@127.0.0.1:1/app?schema={h}"),
    HOSTILE.map(lambda h: f"{_relative(h)}://admin:{DB_PASSWORD}@127.0.0.1:1/app"),
    HOSTILE.map(lambda h: f"{_relative(h)}:{DB_PASSWORD}@127.0.0.1:1/app"),  # no '://'
    HOSTILE,
)

# --- the commands: each template turns drawn values into argv ----------------------

Template = Callable[[st.DrawFn], list[str]]


def _t(*parts: object) -> Template:
    """A template: strings stay, strategies are drawn."""

    def build(draw: st.DrawFn) -> list[str]:
        return [p if isinstance(p, str) else draw(p) for p in parts]  # type: ignore[arg-type]

    return build


def _json_text(draw: st.DrawFn) -> str:
    return json.dumps({"text": draw(HOSTILE)}, ensure_ascii=draw(st.booleans()))


H, W, D = HOSTILE, OUT_PATH, DB_URL
FORMATS = st.sampled_from(["text", "json", "github", "sarif", "junit", "markdown"])
LATER = ["--delay", "3650d"]  # enqueued jobs stay out of any worker's way
TEMPLATES: dict[str, list[Template]] = {
    "init": [_t("init", W), _t("init", "--sheets", H), _t("init", "--lang", H, "--sheets", W)],
    "schema": [_t("schema"), _t("schema", H)],
    "validate": [
        _t("validate", H),
        _t("validate", "--format", FORMATS, H),
        _t("validate", "--format", H),
        _t("validate", "--pythonpath", H, "--check-env", "--strict"),
    ],
    "docs": [
        _t("docs", "--sheets", H, "--out", W),
        _t("docs", "--out", W),
        _t("docs", "--out", W, "--check"),
        _t("docs", "--out", W, "--lang", H),
        _t("docs", "--out", W, "--templates", H),
        _t("docs", "--out", W, "--as-of", H),
        _t("docs", "--out", W, "--inject", W),
    ],
    "tsv": [
        _t("tsv", H),
        _t("tsv", "-o", W),
        _t("tsv", "hostile", "--bom", "-o", W),
        _t("tsv", "--sheets", H, "--lang", H),
    ],
    "explain": [
        _t("explain", H),
        _t("explain", "hostile", "--now", H),
        _t("explain", "hostile", "--format", FORMATS, "--lang", H),
        _t("explain", "hostile", "--templates", H),
    ],
    "export": [
        _t("export", H),
        _t("export", "hostile", "--format", st.sampled_from(EXPORT_FORMATS), "-o", W),
        _t("export", "--format", H, "--sheets", H),
    ],
    "check": [
        _t("check", "--runtime", st.sampled_from(["celery", "rq"]), "--sheets", H),
        _t("check", "--runtime", H),
        _t("check", "--runtime", "rq", "--app", H, "--format", FORMATS),
    ],
    "diff": [
        _t("diff", H, H),
        _t("diff", "jobdefs", H, "--format", FORMATS),
        _t("diff", "jobdefs", "jobdefs", "--db", D, "--fail-on", H),
    ],
    "new": [
        _t("new", H, "--sheets", W),
        _t("new", H, "-o", W, "--copy-defaults"),
        _t("new", "x", "-o", W, "--lang", H),
    ],
    "worker": [
        # In-process, only the refusals before any work: a worker that starts runs
        # in a real process (test_worker_meets_hostile_options).
        _t("worker", "--burst", "--concurrency", H, "--db", D),
        _t("worker", "--burst", "--lease", H, "--poll", H, "--db", D),
    ],
    "enqueue": [
        lambda draw: ["enqueue", "hostile", "--args", _json_text(draw), *LATER],
        _t("enqueue", H, "--args", H, *LATER),
        _t("enqueue", "hostile", "--args", '{"text": "x"}', "--priority", H, *LATER),
        _t("enqueue", "hostile", "--args", '{"text": "x"}', "--delay", H, "--db", D),
    ],
    "start": [
        _t("start", H, "--args", H, *LATER),
        lambda draw: ["start", "hostile", "--args", _json_text(draw), *LATER],
    ],
    "status": [
        _t("status"),
        _t("status", "--db", D),
        _t("status", "--sheets", H, "--format", H),
    ],
    "jobs": [
        _t("jobs"),
        _t("jobs", "show", H),
        _t("jobs", "--job", H, "--limit", H),
        _t("jobs", "--state", H, "--format", H),
        _t("jobs", "--format", "json", "--db", D),
    ],
    "result": [
        _t("result", H),
        _t("result", H, "--db", D),
        _t("result", "1", "--format", H, "--sheets", H),
    ],
    # Never a long wait: a job that may exist is waited on for no time, and a hostile
    # --timeout meets only a fresh store of its own, where no job exists.
    "wait": [
        _t("wait", H, "--timeout", "0"),
        _t("wait", "1", "--timeout", H, "--db", OUT_PATH.map(lambda p: f"sqlite:///{p}")),
        _t("wait", H, "--timeout", "0", "--format", H, "--db", D),
    ],
    "workers": [
        _t("workers"),
        _t("workers", "--db", D),
        _t("workers", "--db", D, "--format", H),
    ],
    "queues": [
        _t("queues", "pause", H),
        _t("queues", "resume", H),
        _t("queues", H, "--db", D),
    ],
    "requeue": [
        _t("requeue", H, "--db", D),
        _t("requeue", "--job", H, "--state", H),
    ],
    "resolve": [_t("resolve", H, "--note", H), _t("resolve", "1", "--note", H, "--db", D)],
    "cancel": [_t("cancel", H), _t("cancel", "2", "--db", D)],
    "prune": [
        _t("prune", "--dry-run", "--batch-size", H),
        _t("prune", "--dry-run", "--db", D, "--sheets", H),
    ],
    "db": [_t("db", H), _t("db", "status", "--db", D), _t("db", "upgrade", "--db", D)],
    "notify": [_t("notify", "test", H), _t("notify", H), _t("notify", "test", "ops")],
    # Only the refusals before serving: a public host without auth never starts.
    "dashboard": [
        _t("dashboard", "--host", "0.0.0.0", "--port", H, "--db", D),
        _t("dashboard", "--host", "0.0.0.0", "--sheets", H, "--docs-url", H, "--sheet-link", H),
        _t("dashboard", "--host", "0.0.0.0", "--lease", H),
    ],
}


def test_every_command_but_the_demo_has_templates() -> None:
    assert set(TEMPLATES) == set(COMMANDS) - {"demo"}


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(TEMPLATES)))
    return draw(st.sampled_from(TEMPLATES[command]))(draw)


# --- running a command in-process ---------------------------------------------------

_scratch = count()


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_in_process(argv: list[str], root: Path) -> tuple[int, str, str]:
    """``main(argv)`` in a fresh scratch folder of ``root``: exit code, stdout, stderr.

    stdout is strict UTF-8 and stderr backslashreplace, as Python sets them for a
    UTF-8 terminal; an exception that escapes ``main`` is returned as its traceback.
    """
    scratch = root / f"scratch-{next(_scratch)}"
    scratch.mkdir()
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(
        err_bytes, encoding="utf-8", errors="backslashreplace", write_through=True
    )
    code: int
    with (
        environment(hostile_env(root)),
        contextlib.chdir(scratch),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # what a user would see as a traceback
            err.write(traceback.format_exc())
            code = 1
    out.flush()
    err.flush()
    return (
        code,
        out_bytes.getvalue().decode("utf-8", "replace"),
        err_bytes.getvalue().decode("utf-8", "replace"),
    )


def check_outcome(argv: object, code: int, out: str, err: str) -> None:
    shown = f"argv={argv!r}\nexit {code}\nstdout: {out[:2000]}\nstderr: {err[:4000]}"
    assert code in (0, 1, 2), shown
    assert "Traceback" not in out + err, shown
    assert not leaked([out, err]), f"secrets {leaked([out, err])} in output\n{shown}"


# --- the project the commands run in ------------------------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose store holds a dead job, a queued one and a done one, all hostile."""
    root = write_project(tmp_path_factory.mktemp("hostile-cli"))
    code, out, err = run_in_process(["db", "upgrade"], root)
    assert code == 0, out + err
    backend = open_backend(f"sqlite:///{root / 'jobs.db'}")
    try:
        texts = [FIXED[3] + FIXED[4], "日本語" * 40, "x" * 100_000]
        jobs = backend.enqueue(
            [NewJob(job="hostile", args={"text": t}, queue="default") for t in texts]
        )
        [claimed] = backend.claim(ClaimOptions(worker_id="w1", lease_seconds=60, limit=1))
        message = f"{FIXED[3]} postgresql://app:{DB_PASSWORD}@db/app {FIXED[4]}"
        assert backend.bury(claimed.lease, ErrorInfo("RuntimeError", message, message))
        assert jobs
    finally:
        backend.close()
    return root


@pytest.fixture(scope="module")
def repo_listing() -> Iterator[None]:
    before = tree_listing(REPO)
    home = Path.home()
    home_before = set(os.listdir(home)) if home.is_dir() else set()
    yield
    # Files other work adds meanwhile (sources, tests, docs) are not the commands'.
    others = re.compile(r"(src|tests|docs)/.*\.(py|md|sql|yaml|json|txt)|.*\.pyc")
    added = sorted(p for p in tree_listing(REPO) - before if not others.fullmatch(p))
    assert not added, f"written in the repository: {added}"
    if home.is_dir():
        assert set(os.listdir(home)) <= home_before | {".cache"}


@settings(
    deadline=None,
    max_examples=int(os.environ.get("JOBDEF_HOSTILE_EXAMPLES", "150")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(argv=command_lines())
def test_no_command_shows_a_traceback_or_a_secret_for_hostile_arguments(
    project: Path, repo_listing: None, argv: list[str]
) -> None:
    code, out, err = run_in_process(argv, project)
    check_outcome(argv, code, out, err)


# --- what this property test found, each kept as a test of its own -------------------


def test_a_path_with_bytes_that_are_not_utf8_is_printed_escaped(project: Path) -> None:
    """A strict UTF-8 stdout failed on the lone surrogate (UnicodeEncodeError)."""
    code, out, err = run_in_process(["docs", "--out", "\udc80"], project)
    check_outcome("docs --out \\x80", code, out, err)
    assert code == 0, err
    assert "create \\udc80/index.md" in out, out


def test_a_name_with_bytes_that_are_not_utf8_is_one_line(project: Path) -> None:
    """SQLite could not encode the lone surrogate of `jobs --job $'\\x80'` (a traceback)."""
    for argv in (["jobs", "--job", "\udc80"], ["requeue", "--job", "q\udcff"]):
        code, out, err = run_in_process(argv, project)
        check_outcome(argv, code, out, err)
        assert code == 2, err
        assert "not UTF-8" in err, err
        assert len(err.splitlines()) == 1, err


def test_a_path_too_long_for_the_system_is_one_line(project: Path) -> None:
    """Path.exists() raises ENAMETOOLONG (Python 3.11): `diff AAA…(300) x` was a traceback."""
    code, out, err = run_in_process(["diff", "A" * 300, "jobdefs"], project)
    check_outcome("diff", code, out, err)
    assert code == 2, err
    assert "File name too long" in err, err
    assert len(err.splitlines()) == 1, err


# --- the cases of the issue, each named ------------------------------------------------

HUGE = "99999999999999999999999"
KNOWN_CASES = {
    "jobs-show-huge-id": ["jobs", "show", HUGE],
    "cancel-huge-id": ["cancel", HUGE],
    "resolve-huge-id": ["resolve", HUGE, "--note", "x"],
    "jobs-show-below-int64": ["jobs", "show", "-9223372036854775809"],
    "cancel-above-int64": ["cancel", "9223372036854775808"],
    "db-url-open-ipv6-bracket": ["status", "--db", f"postgresql://u:{DB_PASSWORD}@[::1/db"],
    "db-url-schema-newline": ["db", "status", "--db", "postgresql://u@127.0.0.1:1/d?schema=n%0A"],
    "tsv-out-missing-folder": ["tsv", "-o", "/nonexistent/x.tsv"],
    "tsv-out-folder": ["tsv", "-o", "."],
    "docs-out-proc": ["docs", "--out", "/proc/jobs"],
    "docs-inject-folder": ["docs", "--inject", "."],
    "jobs-limit-huge": ["jobs", "--limit", HUGE],
    "jobs-limit-negative": ["jobs", "--limit", "-1"],
    "prune-batch-zero": ["prune", "--dry-run", "--batch-size", "0"],
    "prune-batch-huge": ["prune", "--batch-size", HUGE],
    "dashboard-port-huge": ["dashboard", "--port", "99999"],
    "worker-prefetch-huge": ["worker", "--burst", "--prefetch", HUGE],
    "worker-metrics-port-huge": ["worker", "--burst", "--metrics-port", "70000"],
    # A name of 100,000 characters is named in the error, cut short.
    "enqueue-huge-name": ["enqueue", "j" * 100_000],
    "queues-pause-huge-name": ["queues", "pause", "q" * 100_000],
    "notify-test-huge-name": ["notify", "test", "c" * 100_000],
    "new-huge-name": ["new", "n" * 100_000],
    "new-name-too-long": ["new", "n" * 101],
}


@pytest.mark.parametrize("argv", list(KNOWN_CASES.values()), ids=list(KNOWN_CASES))
def test_the_issues_cases_get_one_line(project: Path, argv: list[str]) -> None:
    code, out, err = run_in_process(argv, project)
    check_outcome(argv, code, out, err)
    assert code == 2, (argv, out, err)
    assert len(err.strip().splitlines()) == 1, err
    assert len(err) < 1_000, err[:300]


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--priority", HUGE], "priority of more than 18 digits is not a whole number"),
        (["--delay", "99999999999999999999d"], "run_after 8.64e+24 is not a time from 1970"),
    ],
)
def test_an_enqueue_value_no_engine_can_hold_is_one_line(
    project: Path, option: list[str], says: str
) -> None:
    """SQLite raised OverflowError on the priority; the delay was stored, and every later
    `jobs show` of the job was a traceback."""
    assert run_in_process(["db", "upgrade"], project)[0] == 0
    argv = ["enqueue", "hostile", "--args", '{"text": "x"}', *option]
    code, out, err = run_in_process(argv, project)
    check_outcome(argv, code, out, err)
    assert code == 2, (out, err)
    assert says in err, err
    assert len(err.strip().splitlines()) == 1, err


def _fresh_project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = write_project(tmp_path)
    env = hostile_env(root)
    assert run_jobdef(["db", "upgrade"], root, env).returncode == 0
    return root, env


def _one_line(result: object, *, code: int = 2) -> str:
    assert isinstance(result, subprocess.CompletedProcess)
    out, err = result.stdout.decode(), result.stderr.decode()
    check_outcome(result.args, result.returncode, out, err)
    assert result.returncode == code, out + err
    return out + err


def test_a_corrupted_sqlite_file_is_one_line_in_every_command(tmp_path: Path) -> None:
    root, env = _fresh_project(tmp_path)
    assert run_jobdef(["enqueue", "hostile", "--args", '{"text": "x"}'], root, env).returncode == 0
    db = root / "jobs.db"
    data = bytearray(db.read_bytes())
    data[4096:8192] = b"\xde\xad" * 2048  # a page of the tables overwritten
    db.write_bytes(bytes(data))
    for argv in (
        ["status"],
        ["jobs"],
        ["enqueue", "hostile", "--args", '{"text": "y"}'],
        ["worker", "--burst"],
    ):
        shown = _one_line(run_jobdef(argv, root, env, timeout=60))
        assert "corrupted" in shown, shown
        assert ".recover" in shown, shown


def test_validate_refuses_a_fifo_without_reading_it(tmp_path: Path) -> None:
    root, env = _fresh_project(tmp_path)
    os.mkfifo(root / "jobdefs" / "pipe.yaml")
    _one_line(run_jobdef(["validate", "jobdefs/pipe.yaml"], root, env, timeout=30))


def test_a_symlinked_sheet_is_not_read_nor_its_target_printed(tmp_path: Path) -> None:
    root, env = _fresh_project(tmp_path)
    (root / "credentials").write_text("apiVersion: CREDENTIAL-CONTENT-42\n", encoding="utf-8")
    (root / "jobdefs" / "link.yaml").symlink_to(root / "credentials")
    for argv in (["validate"], ["validate", "--format", "github"], ["docs", "--check"]):
        result = run_jobdef(argv, root, env)
        shown = result.stdout.decode() + result.stderr.decode()
        check_outcome(argv, result.returncode, shown, "")
        assert result.returncode in (1, 2), shown
        assert "CREDENTIAL-CONTENT-42" not in shown


def test_docs_never_writes_through_a_symlinked_temporary_file(tmp_path: Path) -> None:
    root, env = _fresh_project(tmp_path)
    target = tmp_path / "target.txt"
    target.write_text("untouched", encoding="utf-8")
    (root / "out").mkdir()
    for name in (".index.md.tmp", ".hostile.md.tmp"):
        (root / "out" / name).symlink_to(target)
    result = run_jobdef(["docs", "--out", "out"], root, env)
    check_outcome(
        "docs --out out", result.returncode, result.stdout.decode(), result.stderr.decode()
    )
    assert target.read_text(encoding="utf-8") == "untouched"


def test_check_imports_reports_a_module_that_exits_at_import(tmp_path: Path) -> None:
    root, env = _fresh_project(tmp_path)
    (root / "exiter.py").write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    sheet = root / "jobdefs" / "jobs.yaml"
    sheet.write_text(
        sheet.read_text(encoding="utf-8").replace("hostile_handlers:fail", "exiter:fail"), "utf-8"
    )
    shown = _one_line(run_jobdef(["validate", "--check-imports"], root, env, timeout=60), code=1)
    assert "sys.exit(0)" in shown, shown
    assert "handler: exiter:fail" in shown, shown


# --- fixed cases, one per command, each seen through a real process --------------


REAL_PROCESS_CASES = [
    [b"validate", b"\xff\xfe\x1b[2J"],
    [b"explain", b"\xc3\x28\xe2\x80\xae"],
    [b"jobs", b"show", b"\xff"],
    [b"enqueue", b"hostile", b"--args", b'{"text": "\x1b]0;owned\x07"}', b"--delay", b"3650d"],
    [b"tsv", b"-o", b"out-\xff.tsv"],
    [b"status", b"--db", f"postgresql://app:{DB_PASSWORD}@127.0.0.1:1/app".encode()],
    [b"queues", b"pause", b"\xe2\x80\xae\xff"],
    [b"new", b"\xff\x1b", b"--sheets", b"new-sheets"],
]


@pytest.mark.parametrize("argv", REAL_PROCESS_CASES, ids=lambda a: a[0].decode())
def test_real_processes_with_undecodable_bytes_in_argv(project: Path, argv: list[bytes]) -> None:
    scratch = project / f"scratch-proc-{next(_scratch)}"
    scratch.mkdir()
    result = run_jobdef(argv, scratch, hostile_env(project))
    out = result.stdout.decode("utf-8", "replace")
    err = result.stderr.decode("utf-8", "replace")
    check_outcome(argv, result.returncode, out, err)


# --- the worker, a real process, with hostile options -------------------------------

# Not 256: a worker that starts 256 handler processes is a load test, not a hostile input.
_WORKER_VALUES = st.one_of(HOSTILE, st.sampled_from(["0", "1", "257", "1ms", "0s", "-1"]))
WORKER_OPTIONS = st.lists(
    st.one_of(
        st.tuples(
            st.sampled_from(
                [
                    "--queues",
                    "--concurrency",
                    "--prefetch",
                    "--lease",
                    "--grace",
                    "--poll",
                    "--pythonpath",
                    "--log-level",
                    "--sheets",
                ]
            ),
            _WORKER_VALUES,
        ),
        st.tuples(st.just("--db"), DB_URL),
    ),
    min_size=1,
    max_size=3,
)


@settings(deadline=None, max_examples=int(os.environ.get("JOBDEF_HOSTILE_WORKER_EXAMPLES", "8")))
@given(options=WORKER_OPTIONS)
def test_worker_meets_hostile_options(project: Path, options: list[tuple[str, str]]) -> None:
    scratch = project / f"scratch-worker-{next(_scratch)}"
    scratch.mkdir()
    argv = ["worker", "--burst", *[part for pair in options for part in pair]]
    argv = [a[:100_000] for a in argv]  # one argv string is at most 128 KiB (MAX_ARG_STRLEN)
    result = run_jobdef(argv, scratch, hostile_env(project), timeout=120)
    out = result.stdout.decode("utf-8", "replace")
    err = result.stderr.decode("utf-8", "replace")
    check_outcome(argv, result.returncode, out, err)


def test_secrets_module_sees_what_it_looks_for() -> None:
    """The leak check itself: it finds a secret, and the redacted URL has none."""
    assert leaked([f"x {DB_PASSWORD} y"]) == [DB_PASSWORD]
    assert not leaked([re.sub(DB_PASSWORD, "***", secret_db_urls()[0])])
    assert sys.getfilesystemencoding() == "utf-8"
