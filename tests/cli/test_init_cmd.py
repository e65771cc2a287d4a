"""`jobdef init`, `jobdef new` and `jobdef schema -o` in a fresh project: a schema copy
editors read offline, sheets pointing at it relatively, nothing absolute in any file."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import yaml

from jobdef.cli import main
from jobdef.sheets.schema_check import schema_text
from support.sheet_repo import fill_placeholders

SCAFFOLD = (
    "pyproject.toml",
    "jobdefs/defaults.yaml",
    "jobdefs/channels.yaml",
    ".jobdef/jobdef-v1.schema.json",
    ".pre-commit-config.yaml",
    ".github/workflows/jobdef.yml",
    ".vscode/settings.json",
)


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("JOBDEF_SHEETS", "JOBDEF_DOCS", "JOBDEF_LANG", "JOBDEF_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_init_scaffolds_a_project_that_validates(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    for name in SCAFFOLD:
        assert (fresh / name).is_file(), name
        assert f"wrote {name}" in out
        assert str(fresh) not in (fresh / name).read_text("utf-8"), name
    config = tomllib.loads((fresh / "pyproject.toml").read_text("utf-8"))["tool"]["jobdef"]
    assert config["sheets"] == "jobdefs"
    assert (fresh / ".jobdef/jobdef-v1.schema.json").read_text("utf-8") == schema_text()
    settings = json.loads((fresh / ".vscode/settings.json").read_text("utf-8"))
    assert settings["yaml.schemas"]["./.jobdef/jobdef-v1.schema.json"][0] == "jobdefs/*.yaml"
    hooks = yaml.safe_load((fresh / ".pre-commit-config.yaml").read_text("utf-8"))
    ids = [hook["id"] for hook in hooks["repos"][0]["hooks"]]
    assert ids == ["jobdef-validate", "jobdef-docs-check"]
    for sheet in ("defaults", "channels"):
        first = (fresh / f"jobdefs/{sheet}.yaml").read_text("utf-8").splitlines()[0]
        assert first == "# yaml-language-server: $schema=../.jobdef/jobdef-v1.schema.json"
    assert main(["validate", "--strict"]) == 0

    # jobdef new in the scaffolded folder: inherits the Defaults, points at the copy.
    assert main(["new", "send_invoice"]) == 0
    assert "wrote jobdefs/send_invoice.yaml;" in capsys.readouterr().out
    text = (fresh / "jobdefs/send_invoice.yaml").read_text("utf-8")
    assert text.startswith("# yaml-language-server: $schema=../.jobdef/jobdef-v1.schema.json\n")
    assert "Inherited from Defaults in jobdefs/defaults.yaml" in text
    assert str(fresh) not in text
    assert main(["validate", "--strict"]) == 1  # the TODOs new leaves for the author
    fill_placeholders(fresh / "jobdefs/send_invoice.yaml")
    assert main(["validate", "--strict"]) == 0


def test_init_keeps_what_exists_and_appends_to_a_pyproject(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (fresh / "pyproject.toml").write_text('[project]\nname = "shop"\n', encoding="utf-8")
    (fresh / ".vscode").mkdir()
    (fresh / ".vscode/settings.json").write_text('{"editor.tabSize": 2}', encoding="utf-8")
    (fresh / ".pre-commit-config.yaml").write_text("repos: []\n", encoding="utf-8")
    assert main(["init", "--lang", "ja"]) == 0
    out = capsys.readouterr().out
    assert "added [tool.jobdef] to pyproject.toml" in out
    assert "kept .pre-commit-config.yaml (it exists)" in out
    assert (fresh / ".pre-commit-config.yaml").read_text("utf-8") == "repos: []\n"
    pyproject = tomllib.loads((fresh / "pyproject.toml").read_text("utf-8"))
    assert pyproject["project"]["name"] == "shop"
    assert pyproject["tool"]["jobdef"]["lang"] == "ja"
    settings = json.loads((fresh / ".vscode/settings.json").read_text("utf-8"))
    assert settings["editor.tabSize"] == 2
    assert "./.jobdef/jobdef-v1.schema.json" in settings["yaml.schemas"]
    assert "運用担当のログ通知" in (fresh / "jobdefs/channels.yaml").read_text("utf-8")
    before = {name: (fresh / name).read_text("utf-8") for name in SCAFFOLD}
    assert main(["init"]) == 0  # twice: nothing changes
    assert {name: (fresh / name).read_text("utf-8") for name in SCAFFOLD} == before


def test_new_in_an_empty_sheets_folder_writes_the_schema_copy(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (fresh / "jobdefs").mkdir()
    assert main(["new", "resize_image", "--lang", "en"]) == 0
    assert "wrote .jobdef/jobdef-v1.schema.json" in capsys.readouterr().out
    text = (fresh / "jobdefs/resize_image.yaml").read_text("utf-8")
    assert (
        text.splitlines()[0] == "# yaml-language-server: $schema=../.jobdef/jobdef-v1.schema.json"
    )
    assert "jobdef.dev" not in text


def test_schema_output_and_staleness(fresh: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init"]) == 0
    copy = fresh / ".jobdef/jobdef-v1.schema.json"
    copy.write_text('{"old": true}\n', encoding="utf-8")
    capsys.readouterr()
    assert main(["validate"]) == 0
    err = capsys.readouterr().err
    assert "refresh it: jobdef schema -o .jobdef/jobdef-v1.schema.json" in err
    assert main(["schema", "-o", ".jobdef/jobdef-v1.schema.json"]) == 0
    assert copy.read_text("utf-8") == schema_text()
    assert main(["validate"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["schema", "--output", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["$id"].startswith("https://raw.githubusercontent")


def test_init_refuses_a_sheets_folder_outside_the_project(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "--sheets", "../elsewhere"]) == 2
    assert "must be a folder inside the project" in capsys.readouterr().err
    assert not (fresh / "pyproject.toml").exists()


def test_the_repositorys_own_copy_of_the_schema_is_current() -> None:
    repo = Path(__file__).resolve().parents[2]
    copy = repo / ".jobdef" / "jobdef-v1.schema.json"
    assert copy.read_text("utf-8") == schema_text(), "run: jobdef schema -o " + str(copy)
    for sheet in sorted((repo / "jobdefs").glob("*.yaml")):
        first = sheet.read_text("utf-8").splitlines()[0]
        assert first == "# yaml-language-server: $schema=../.jobdef/jobdef-v1.schema.json"


def test_the_schemastore_entry_names_the_schemas_own_address() -> None:
    repo = Path(__file__).resolve().parents[2]
    entry = json.loads((repo / "schemastore-catalog-entry.json").read_text("utf-8"))
    assert entry["url"] == json.loads(schema_text())["$id"]
    assert entry["url"].endswith("/src/jobdef/sheets/schema/jobdef-v1.schema.json")
    assert "jobdefs/*.yaml" in entry["fileMatch"]


@pytest.mark.parametrize(
    "old_line",
    [
        "# yaml-language-server: $schema=https://jobdef.dev/schema/jobdef-v1.schema.json",
        "# yaml-language-server: $schema=../src/jobdef/schema/jobdef-v1.schema.json",
    ],
)
def test_new_does_not_copy_a_schema_line_that_serves_nothing(
    fresh: Path, old_line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (fresh / "jobdefs").mkdir()
    (fresh / "jobdefs" / "channels.yaml").write_text(
        f"{old_line}\napiVersion: jobdef/v1\nkind: Channel\nname: ops\ntype: log\n", "utf-8"
    )
    assert main(["new", "send_invoice"]) == 0
    text = (fresh / "jobdefs/send_invoice.yaml").read_text("utf-8")
    assert text.splitlines()[0] == (
        "# yaml-language-server: $schema=../.jobdef/jobdef-v1.schema.json"
    )


def test_init_ignores_the_sqlite_job_database_in_git(fresh: Path) -> None:
    assert main(["init"]) == 0
    patterns = (fresh / ".gitignore").read_text("utf-8").splitlines()
    for name in ("jobdef.db", "jobdef.db-*", "jobdef.sarif"):
        assert name in patterns


def test_init_appends_to_a_gitignore_and_keeps_its_lines(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (fresh / ".gitignore").write_text("node_modules/\njobdef.sarif", "utf-8")
    assert main(["init"]) == 0
    assert "updated .gitignore" in capsys.readouterr().out
    lines = (fresh / ".gitignore").read_text("utf-8").splitlines()
    assert lines == ["node_modules/", "jobdef.sarif", "jobdef.db", "jobdef.db-*"]
    assert main(["init"]) == 0
    assert "kept .gitignore" in capsys.readouterr().out


def test_the_workflow_installs_a_jobdef_that_pip_can_find(fresh: Path) -> None:
    """An unreleased jobdef is on no package index: the workflow must not say plain
    `pip install jobdef`, and what it says must be a requirement pip parses."""
    from importlib import metadata

    from packaging.requirements import Requirement

    assert main(["init"]) == 0
    workflow = yaml.safe_load((fresh / ".github/workflows/jobdef.yml").read_text("utf-8"))
    runs = [step["run"] for step in workflow["jobs"]["sheets"]["steps"] if "run" in step]
    install = next(run for run in runs if run.startswith("pip install "))
    quoted = install.removeprefix("pip install ")
    assert quoted.startswith('"'), install
    assert quoted.endswith('"'), install
    requirement = Requirement(quoted.strip('"'))
    assert requirement.name == "jobdef"
    version = metadata.version("jobdef")
    if "dev" in version or "+" in version:
        assert requirement.url is not None
        assert requirement.url.startswith("git+https://")
    else:
        assert str(requirement.specifier) == f"=={version}"


def test_init_points_at_a_guide_the_user_can_open(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert "see docs/quickstart.md" not in last
    assert "https://github.com/jobdef/jobdef/blob/main/docs/quickstart.md" in last
