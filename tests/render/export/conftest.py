"""Fixtures of the export tests: sheets written for a case, the example sheets, asl-validator."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from export_cases import CHANNELS, EXAMPLES, job_sheet, missing

from jobdef.policy.registry import Registry
from jobdef.sheets.pipeline import load_registry

ASL_VALIDATOR = "asl-validator@4.0.0"


@pytest.fixture
def sheets(tmp_path: Path):
    """``sheets({"name": "body", ...})`` -> the registry of those Job sheets."""

    def build(jobs: dict[str, str], extra: str = "") -> Registry:
        folder = tmp_path / "jobdefs"
        folder.mkdir(exist_ok=True)
        (folder / "channels.yaml").write_text(CHANNELS + extra, "utf-8")
        for name, body in jobs.items():
            (folder / f"{name}.yaml").write_text(job_sheet(name, body), "utf-8")
        return load_registry([folder])

    return build


@pytest.fixture(scope="session")
def examples() -> Registry:
    return load_registry([EXAMPLES])


@pytest.fixture(scope="session")
def asl_validator() -> list[str]:
    """The command of the asl-validator CLI: $JOBDEF_ASL_VALIDATOR, else the npm package
    installed (once) into the user's cache folder, outside the repository."""
    if os.environ.get("JOBDEF_ASL_VALIDATOR"):
        return [os.environ["JOBDEF_ASL_VALIDATOR"]]
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing("node and npm (for the npm package asl-validator)")
        raise AssertionError  # unreachable
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    prefix = cache / "jobdef-tests" / ASL_VALIDATOR.replace("@", "-")
    script = prefix / "node_modules" / "asl-validator" / "dist" / "bin" / "asl-validator.js"
    if not script.is_file():
        result = subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", ASL_VALIDATOR],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if result.returncode != 0:
            missing(f"{ASL_VALIDATOR} (npm install failed: {result.stderr.strip()[-300:]})")
    return [node, str(script)]
