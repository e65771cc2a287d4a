"""Time ``jobdef docs`` over a generated corpus (default 2,000 sheets), as a whole process.

Usage: ``python bench/docs.py [--sheets 2000] [--runs 3] [--lang en]``. Prints
one JSON line: the median wall time of ``python -m jobdef docs`` (load,
render and write every page, start-up included), of ``--check`` on the written
output, of ``jobdef validate`` on the same corpus (when this install has it),
and of the in-process load and render alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import write_corpus


def _timed(argv: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> float:
    start = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if result.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr[-2000:]}")
    return elapsed


def _render_only(sheets: Path, lang: str) -> tuple[float, float, int]:
    from jobdef.registry import load_registry
    from jobdef.render.docs import render_docs

    start = time.perf_counter()
    registry = load_registry([sheets])
    loaded = time.perf_counter()
    pages = render_docs(registry, lang)
    return loaded - start, time.perf_counter() - loaded, len(pages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sheets", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lang", choices=("en", "ja"), default="en")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jobdef-bench-docs-") as tmp:
        root = Path(tmp)
        sheets = write_corpus(root / "sheets", args.sheets)
        out = root / "out"
        base = [sys.executable, "-m", "jobdef", "docs", "--sheets", str(sheets), "--out", str(out)]
        base += ["--lang", args.lang]
        write, check = [], []
        for _ in range(args.runs):
            if out.exists():
                for page in out.iterdir():
                    page.unlink()
            write.append(_timed(base, root))
            check.append(_timed([*base, "--check"], root))
        validate = []
        if importlib.util.find_spec("jobdef.cli.validate_cmd") is not None:
            command = [sys.executable, "-m", "jobdef", "validate", str(sheets)]
            validate = [_timed(command, root, ok=(0, 1)) for _ in range(args.runs)]
        loads, renders = [], []
        for _ in range(args.runs):
            load, render, pages = _render_only(sheets, args.lang)
            loads.append(load)
            renders.append(render)
    print(
        json.dumps(
            {
                "bench": "docs",
                "sheets": args.sheets,
                "pages": pages,
                "lang": args.lang,
                "runs": args.runs,
                "docs_write_s": round(statistics.median(write), 3),
                "docs_check_s": round(statistics.median(check), 3),
                "validate_s": round(statistics.median(validate), 3) if validate else None,
                "load_registry_s": round(statistics.median(loads), 3),
                "render_s": round(statistics.median(renders), 3),
                "sheets_per_s": round(args.sheets / statistics.median(write), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
