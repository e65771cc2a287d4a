"""Milliseconds of one `jobdef validate` of a freshly initialised project, as pre-commit
runs it on every commit: a whole process, start-up included.

Runs ``jobdef init`` in a temporary folder (its Defaults and its Channel; ``--job`` adds
the sheet ``jobdef new`` writes), then times, as separate processes interleaved run by
run so that each sees the same machine load:

- the ``jobdef`` script next to this Python, once per ``--src`` given (that folder first
  on PYTHONPATH, so two checkouts compare side by side; none: the installed jobdef),
- the same with ``python -S -m jobdef`` (no site: no .pth file of the environment runs),
- ``python -c pass`` and ``python -S -c pass``, the interpreter's own start.

Usage: ``python bench/validate_startup.py [--runs 40] [--job] [--src DIR ...]``.
Prints the median and the minimum wall time and the median CPU time of each.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path


def bytecode_env() -> dict[str, str]:
    """This process's environment without PYTHONDONTWRITEBYTECODE: a Python started with
    it set never caches the modules it compiles, so every start of an editable install
    compiles jobdef anew (about 100 ms on a small machine), which no installed package
    pays."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, check=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed * 1000, cpu * 1000


def package_root() -> str:
    """The folder this Python imports the jobdef package from: site-packages when it is
    installed, the checkout's ``src`` when it is installed editable, whose import hook
    a ``.pth`` file sets up, and ``python -S`` reads none."""
    spec = importlib.util.find_spec("jobdef")
    if spec is None or spec.origin is None:
        raise SystemExit("jobdef is not importable here: install it, or pass --src")
    return str(Path(spec.origin).parent.parent)


def print_medians(runs: dict[str, list[tuple[float, float]]]) -> None:
    """Per command: the median and the minimum wall time and the median CPU time of its
    runs (each a ``timed`` result), after the machine's load."""
    count = len(next(iter(runs.values()), []))
    print(f"medians of {count} interleaved runs, load {os.getloadavg()[0]:.2f}")
    for label, times in runs.items():
        wall = [t[0] for t in times]
        cpu = statistics.median(t[1] for t in times)
        print(
            f"{label:60} {statistics.median(wall):6.1f} ms wall "
            f"(min {min(wall):6.1f})  {cpu:6.1f} ms CPU"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="runs of each command")
    parser.add_argument("--job", action="store_true", help="add the sheet `jobdef new` writes")
    parser.add_argument("--src", action="append", default=[], help="a checkout's src folder")
    args = parser.parse_args()
    python = sys.executable
    script = str(Path(python).parent / "jobdef")
    site_packages = sysconfig.get_paths()["purelib"]
    env = bytecode_env()
    commands: dict[str, tuple[list[str], dict[str, str]]] = {}
    for src in args.src or [""]:
        name = f" ({src})" if src else ""
        plain = {**env, "PYTHONPATH": src} if src else env
        no_site = {
            **env,
            "PYTHONPATH": os.pathsep.join([src or package_root(), site_packages]),
        }
        commands[f"jobdef validate{name}"] = ([python, script, "validate"], plain)
        commands[f"python -S -m jobdef validate{name}"] = (
            [python, "-S", "-m", "jobdef", "validate"],
            no_site,
        )
    commands["python -c pass"] = ([python, "-c", "pass"], env)
    commands["python -S -c pass"] = ([python, "-S", "-c", "pass"], env)
    folder = Path(tempfile.mkdtemp(prefix="jobdef-startup-"))
    try:
        first_env = next(iter(commands.values()))[1]
        setup = [["init"], ["new", "my_job"]] if args.job else [["init"]]
        for words in setup:
            subprocess.run(
                [python, script, *words],
                cwd=folder,
                env=first_env,
                stdout=subprocess.DEVNULL,
                check=True,
            )
        for command, command_env in commands.values():  # compiles and caches the bytecode
            timed(command, folder, command_env)
        runs: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
        labels = list(commands)
        for number in range(args.runs):
            for label in labels if number % 2 == 0 else reversed(labels):
                command, command_env = commands[label]
                runs[label].append(timed(command, folder, command_env))
        print_medians(runs)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
