"""Where handlers are imported from: ``pythonpath`` of the configuration, resolved once.

Flag, then ``JOBDEF_PYTHONPATH``, then ``[tool.jobdef] pythonpath`` (relative to
its pyproject.toml), then the folder of the pyproject.toml holding
``[tool.jobdef]``, then the working directory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from jobdef.errors import ConfigError
from jobdef.project import load_config, use_pythonpath


def _write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(text, encoding="utf-8")
    return folder.resolve()


def test_the_folder_of_the_pyproject_holding_tool_jobdef_is_the_default(tmp_path: Path) -> None:
    root = _write(tmp_path / "app", '[tool.jobdef]\nsheets = "jobdefs"\n')
    (root / "deep" / "er").mkdir(parents=True)
    config = load_config(environ={}, start=root / "deep" / "er")
    assert config.pythonpath == (str(root.resolve()),)


def test_without_tool_jobdef_the_working_directory_is_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _write(tmp_path / "app", '[project]\nname = "app"\n')
    monkeypatch.chdir(root)
    assert load_config(environ={}).pythonpath == (str(root.resolve()),)


def test_tool_jobdef_pythonpath_is_relative_to_its_pyproject(tmp_path: Path) -> None:
    root = _write(tmp_path / "app", '[tool.jobdef]\npythonpath = ["src", "."]\n')
    (root / "sub").mkdir()
    config = load_config(environ={}, start=root / "sub")
    assert config.pythonpath == (str((root / "src").resolve()), str(root.resolve()))


def test_the_variable_and_the_flag_win_and_read_like_pythonpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _write(tmp_path / "app", '[tool.jobdef]\npythonpath = "src"\n')
    monkeypatch.chdir(root)
    env = {"JOBDEF_PYTHONPATH": os.pathsep.join(["lib", "/opt/handlers"])}
    assert load_config(environ=env).pythonpath == (str(root / "lib"), "/opt/handlers")
    flagged = load_config({"pythonpath": "other"}, environ=env)
    assert flagged.pythonpath == (str(root / "other"),)


def test_a_pythonpath_that_is_not_folders_is_one_clear_line(tmp_path: Path) -> None:
    root = _write(tmp_path / "app", "[tool.jobdef]\npythonpath = 3\n")
    with pytest.raises(ConfigError) as raised:
        load_config(environ={}, start=root)
    assert str(raised.value) == (
        f"{root / 'pyproject.toml'}: [tool.jobdef] pythonpath must be a folder or a list of "
        'folders, got 3; write pythonpath = "src" or pythonpath = ["src", "."]'
    )


def test_use_pythonpath_puts_the_folders_first_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _write(tmp_path, '[tool.jobdef]\npythonpath = ["a", "b"]\n')
    monkeypatch.setattr(sys, "path", ["/x", str(root / "b"), "/y"])
    use_pythonpath(load_config(environ={}, start=root))
    assert sys.path == [str(root / "a"), str(root / "b"), "/x", "/y"]


def test_the_default_folders_are_the_projects_from_any_folder_in_it(tmp_path: Path) -> None:
    root = _write(tmp_path / "app", '[tool.jobdef]\nlang = "ja"\n')
    (root / "src" / "deep").mkdir(parents=True)
    config = load_config(environ={}, start=root / "src" / "deep")
    assert (config.sheets, config.docs) == (str(root / "jobdefs"), str(root / "docs" / "jobs"))


def test_the_testing_kit_reads_the_project_as_the_commands_do(tmp_path: Path) -> None:
    from jobdef.testing import load_project_registry

    root = _write(tmp_path / "app", "[tool.jobdef]\nmystery = 1\n")
    with pytest.raises(ConfigError, match=r"\[tool.jobdef\] has unknown key\(s\) mystery"):
        load_project_registry(start=root)
