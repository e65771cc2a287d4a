"""Time `jobdef docs` as a whole process on the corpus of `bench/validate.py`, beside `validate`.

The corpus is the one `bench/validate.py` generates (``make_corpus``: a seeded
mix of realistic sheets plus one Defaults and one Channel file), so the figures
sit next to the validate figures for the same files. Per run, interleaved so
all see the same machine load:

- ``jobdef validate CORPUS --strict``;
- ``jobdef docs --sheets CORPUS --out OUT`` into an empty folder (load,
  validate, render and write one page per job plus the index);
- ``jobdef docs ... --check`` against that output (render and compare).

Then the in-process render alone (registry already loaded). Medians of
``--runs`` runs. Usage: ``python bench/docs.py [--sheets 2000] [--runs 3] [--lang en]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from validate import make_corpus, timed


def _render_seconds(sheets: Path, lang: str) -> tuple[float, int]:
    from jobdef.render.docs import render_docs
    from jobdef.sheets.pipeline import load_registry

    registry = load_registry([sheets])
    started = time.perf_counter()
    pages = render_docs(registry, lang)
    return time.perf_counter() - started, len(pages)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sheets", type=int, default=2000, help="files in the corpus")
    parser.add_argument("--runs", type=int, default=3, help="runs of each command; median reported")
    parser.add_argument("--lang", choices=("en", "ja"), default="en")
    args = parser.parse_args()
    jobdef = [sys.executable, "-m", "jobdef"]
    folder = Path(tempfile.mkdtemp(prefix="jobdef-bench-docs-"))
    try:
        files = make_corpus(folder / "jobdefs", args.sheets)
        out = folder / "out"
        docs = [*jobdef, "docs", "--sheets", str(folder / "jobdefs"), "--out", str(out)]
        docs += ["--lang", args.lang]
        commands = {
            "jobdef validate": [*jobdef, "validate", str(folder / "jobdefs"), "--strict"],
            "jobdef docs": docs,
            "jobdef docs --check": [*docs, "--check"],
        }
        runs: dict[str, list[tuple[float, float]]] = {}
        for _ in range(args.runs):
            shutil.rmtree(out, ignore_errors=True)
            for label, command in commands.items():
                runs.setdefault(label, []).append(timed(command))
        render = [_render_seconds(folder / "jobdefs", args.lang) for _ in range(args.runs)]
        pages = render[0][1]
        print(
            f"corpus: {len(files)} files, {pages} pages ({args.lang}), medians of {args.runs} runs"
        )
        for label, times in runs.items():
            wall = statistics.median(t[0] for t in times)
            cpu = statistics.median(t[1] for t in times)
            print(
                f"{label:20} {wall:7.3f} s wall {len(files) / wall:7.0f} files/s   {cpu:7.3f} s CPU"
            )
        seconds = statistics.median(r[0] for r in render)
        print(f"{'render only':20} {seconds:7.3f} s wall {pages / seconds:7.0f} pages/s")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
