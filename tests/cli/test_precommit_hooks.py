"""The pre-commit hooks, run by real pre-commit in a temporary git repository.

The hooks of .pre-commit-hooks.yaml are run as written (entry, files,
pass_filenames) from a ``repo: local`` block with ``language: system``, so pre-commit
installs nothing and the test works offline; the configuration ``jobdef init`` writes
is run as it is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support.sheet_repo import fill_placeholders

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _pre_commit() -> list[str]:
    try:
        import pre_commit  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true requires pre-commit (pip install -e '.[test]')")
        pytest.skip("pre-commit is not installed")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    return [sys.executable, "-m", "pre_commit"]


def _env(tmp_path: Path) -> dict[str, str]:
    scripts = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": scripts + os.pathsep + os.environ.get("PATH", ""),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A git repository set up by jobdef init, with one job, its handler and its docs."""
    root = tmp_path / "shop"
    root.mkdir()
    env = _env(tmp_path)
    jobdef = [sys.executable, "-m", "jobdef"]
    for argv in (
        ["git", "init", "-q"],
        [*jobdef, "init"],
        [*jobdef, "new", "send_invoice"],
    ):
        done = _run(argv, root, env)
        assert done.returncode == 0, done.stdout + done.stderr
    fill_placeholders(root / "jobdefs" / "send_invoice.yaml")
    done = _run([*jobdef, "docs"], root, env)
    assert done.returncode == 0, done.stdout + done.stderr
    (root / "app").mkdir()
    (root / "app" / "__init__.py").write_text("", encoding="utf-8")
    (root / "app" / "jobs.py").write_text(
        "def send_invoice(ctx, record_id):\n    pass\n", encoding="utf-8"
    )
    return root, env


def _hooks_as_local() -> str:
    """.pre-commit-hooks.yaml as a repo: local block that runs the installed jobdef."""
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text("utf-8"))
    assert [hook["id"] for hook in hooks] == [
        "jobdef-validate",
        "jobdef-docs-check",
        "jobdef-validate-imports",
    ]
    local = [{**hook, "language": "system"} for hook in hooks]
    return yaml.safe_dump({"repos": [{"repo": "local", "hooks": local}]}, sort_keys=False)


def _pre_commit_run(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert _run(["git", "add", "-A"], root, env).returncode == 0
    return _run([*_pre_commit(), "run", "--all-files", "--color", "never"], root, env)


def test_the_hooks_pass_a_good_project_and_fail_a_bad_sheet_or_stale_docs(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    config = root / ".pre-commit-config.yaml"
    config.rename(root / "init-pre-commit-config.yaml")
    config.write_text(_hooks_as_local(), encoding="utf-8")
    good = _pre_commit_run(root, env)
    assert good.returncode == 0, good.stdout + good.stderr
    for name in ("jobdef validate", "jobdef docs are up to date", "--check-imports"):
        assert any(name in line and "Passed" in line for line in good.stdout.splitlines())

    sheet = root / "jobdefs" / "send_invoice.yaml"
    text = sheet.read_text("utf-8")
    sheet.write_text(text + "handlr: app.jobs:send_invoice\n", encoding="utf-8")
    bad = _pre_commit_run(root, env)
    assert bad.returncode == 1
    assert "jobdefs/send_invoice.yaml:" in bad.stdout
    assert "error JD101 unknown field 'handlr'" in bad.stdout

    # A valid change the docs were not regenerated for: only the docs hook fails.
    sheet.write_text(text.replace("title: Send invoice", "title: Send the invoice"), "utf-8")
    stale = _pre_commit_run(root, env)
    assert stale.returncode == 1
    failed = [line for line in stale.stdout.splitlines() if line.endswith("Failed")]
    assert len(failed) == 1, stale.stdout
    assert "jobdef docs are up to date" in failed[0]

    # A handler that no longer imports: only --check-imports (language: system) sees it.
    assert _run([sys.executable, "-m", "jobdef", "docs"], root, env).returncode == 0
    (root / "app" / "jobs.py").write_text("def other(ctx):\n    pass\n", encoding="utf-8")
    broken = _pre_commit_run(root, env)
    assert broken.returncode == 1
    failed = [line for line in broken.stdout.splitlines() if line.endswith("Failed")]
    assert len(failed) == 1, broken.stdout
    assert "--check-imports" in failed[0]

    # The configuration jobdef init wrote, as it is: it checks the sheets and the docs.
    init_config = root / "init-pre-commit-config.yaml"
    assert init_config.is_file()
    (root / ".pre-commit-config.yaml").write_text(init_config.read_text("utf-8"), "utf-8")
    assert _pre_commit_run(root, env).returncode == 0
    defaults = root / "jobdefs" / "defaults.yaml"
    defaults.write_text(defaults.read_text("utf-8") + "max_attemps: 3\n", encoding="utf-8")
    bad_defaults = _pre_commit_run(root, env)
    assert bad_defaults.returncode == 1
    assert "did you mean 'max_attempts'?" in bad_defaults.stdout


def test_the_readmes_hooks_rev_is_a_commit_that_defines_its_hooks() -> None:
    """The README's `rev:` must name something pre-commit can check out: a commit (or a
    tag) of this repository whose .pre-commit-hooks.yaml has every hook id it lists."""
    readme = (REPO / "README.md").read_text("utf-8")
    block = readme[readme.index("  - repo: https://github.com/jobdef/jobdef") :]
    block = block[: block.index("```")]
    (entry,) = yaml.safe_load("repos:\n" + block)["repos"]
    rev = str(entry["rev"])
    shown = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:.pre-commit-hooks.yaml"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 0, f"README rev {rev} is not in this repository: {shown.stderr}"
    defined = {hook["id"] for hook in yaml.safe_load(shown.stdout)}
    assert {hook["id"] for hook in entry["hooks"]} <= defined
