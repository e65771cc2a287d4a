"""Reading and checking a set of sheets: the strict loader, the schema and the rules, in one pass.

:func:`validate_sheets` never raises for a mistake in a sheet: it returns every
document it could read with every finding of every file. :func:`load_documents`
is the entry point of :func:`jobdef.sheets.pipeline.load_registry`: the same pass, but
any error raises :class:`~jobdef.errors.SheetError` carrying all diagnostics.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from jobdef.errors import SheetError, UnreadableInputError
from jobdef.sheets.diagnostics import Diagnostic, sort_diagnostics
from jobdef.sheets.document import Document
from jobdef.sheets.files import RefusedFile, shown_path
from jobdef.sheets.rules import check, check_document
from jobdef.sheets.rules.context import Context
from jobdef.sheets.rules.durations import DURATION_FORMAT
from jobdef.sheets.rules.loading import NO_SHEETS, YAML11_AMBIGUOUS
from jobdef.sheets.schema_check import check_document as check_schema
from jobdef.sheets.strict_yaml import read_file

if TYPE_CHECKING:
    from jobdef.policy.model import JobPolicy
    from jobdef.policy.registry import Registry
    from jobdef.policy.workflow import WorkflowPolicy

SUFFIXES = (".yaml", ".yml")


class Validation(NamedTuple):
    """What one validation run found: the documents read, the findings, the files read.

    ``jobs`` holds the effective policy of every Job the semantic rules checked,
    so that loading a registry does not build each job a second time.
    """

    documents: list[Document]
    diagnostics: list[Diagnostic]
    files: list[str]
    jobs: list[JobPolicy] = []  # noqa: RUF012  # NamedTuple fields cannot take a factory


def _folder_files(folder: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # .git, .venv and friends
        # os.walk does not enter a symlinked folder; it is listed, so read_file refuses it.
        found.extend(Path(root) / name for name in dirs if os.path.islink(Path(root) / name))
        found.extend(
            Path(root) / name
            for name in files
            if name.endswith(SUFFIXES) and not name.startswith(".")
        )
    return found


def sheet_files(paths: Sequence[str | Path]) -> list[Path]:
    """Every ``*.yaml``/``*.yml`` file under ``paths``, sorted; files given directly included.

    A symlink (named, found in a folder, or a folder itself) is listed as it is, so
    that reading it refuses it: jobdef never follows a symlink to a sheet.
    Raises :class:`~jobdef.errors.UnreadableInputError` for a path that does not exist.
    """
    found: list[Path] = []
    missing: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir() and not path.is_symlink():
            found.extend(_folder_files(path))
        elif os.path.lexists(path):
            found.append(path)
        else:
            missing.append(str(raw))
    if missing:
        raise UnreadableInputError(
            f"no such file or folder: {', '.join(missing)}; check the path "
            "(or `sheets` in [tool.jobdef])"
        )
    return sorted(set(found))


def _empty_folders(paths: Sequence[str | Path], files: list[Path]) -> list[Diagnostic]:
    out = []
    for raw in paths:
        folder = Path(raw)
        if folder.is_dir() and not any(folder in f.parents for f in files):
            out.append(
                NO_SHEETS.at(
                    str(raw),
                    1,
                    1,
                    f"no *.yaml or *.yml sheets in folder {raw}; point jobdef at the folder "
                    "that holds the sheets (or set `sheets` in [tool.jobdef])",
                )
            )
    return out


def validate_sheets(paths: Sequence[str | Path], *, check_imports: bool = False) -> Validation:
    """Load and check every sheet under ``paths``; all findings of all files, sorted.

    Raises :class:`~jobdef.errors.UnreadableInputError` only when a path does
    not exist or a file cannot be read at all (exit code 2 territory).
    """
    files = sheet_files(paths)
    diagnostics: list[Diagnostic] = _empty_folders(paths, files)
    documents: list[Document] = []
    buildable: dict[int, bool] = {}
    errors_of: dict[int, list[Diagnostic]] = {}
    unreadable: list[str] = []
    for path in files:
        try:
            loaded = read_file(path)
        except RefusedFile as exc:
            unreadable.append(f"{path}: {exc.strerror}")
            continue
        except OSError as exc:
            unreadable.append(
                f"{path}: cannot read it ({exc.strerror or exc}); check the file permissions"
            )
            continue
        diagnostics.extend(loaded.diagnostics)
        for doc in loaded.documents:
            found, owned = check_document(doc)
            found.extend(check_schema(doc, owned))
            diagnostics.extend(found)
            buildable[id(doc)] = not any(d.severity == "error" for d in found)
            errors_of[id(doc)] = found
            documents.append(doc)
    if unreadable:  # one line per file
        raise UnreadableInputError("\n".join(unreadable))
    valid = [doc for doc in documents if buildable[id(doc)]]
    defaults = [doc for doc in documents if doc.kind == "Defaults"]
    jobs, flows = _built(
        valid, defaults, defaults_valid=all(buildable[id(doc)] for doc in defaults)
    )
    context = Context(
        documents=documents,
        valid=valid,
        jobs=jobs,
        check_imports=check_imports,
        workflows=flows,
    )
    diagnostics.extend(check(context))
    diagnostics.extend(_set_aside(documents, valid, errors_of, check_imports))
    return Validation(
        documents,
        sort_diagnostics(_drop_superseded(diagnostics)),
        [str(f) for f in files],
        [policy for _, policy in jobs],
    )


def _built(
    valid: list[Document], defaults: list[Document], *, defaults_valid: bool = True
) -> tuple[list[tuple[Document, JobPolicy]], list[tuple[Document, WorkflowPolicy]]]:
    """The policy of each valid Job (when the Defaults are valid too) and Workflow.

    Sheets without either build nothing, and do not load the policy model that building
    needs (:mod:`jobdef.policy.values` says why that matters).
    """
    if not any(doc.kind in ("Job", "Workflow") for doc in valid):
        return [], []
    from jobdef.sheets.build import build_job, build_workflow

    jobs = []
    if defaults_valid:
        jobs = [(doc, build_job(doc, defaults)) for doc in valid if doc.kind == "Job"]
    flows = [(doc, build_workflow(doc)) for doc in valid if doc.kind == "Workflow"]
    return jobs, flows


def _set_aside(
    documents: list[Document],
    valid: list[Document],
    errors_of: dict[int, list[Diagnostic]],
    check_imports: bool,
) -> list[Diagnostic]:
    """The findings of the effective policies' rules about the jobs and flows the run
    above could not build: each Job, Defaults and Workflow document with errors read
    again without its fields in error (:mod:`jobdef.sheets.salvage`), so one run
    reports every finding it can."""
    valid_ids = {id(doc) for doc in valid}
    if len(valid_ids) == len(documents):
        return []  # nothing to read again (and the salvage module is not loaded)
    from jobdef.sheets.salvage import KINDS, mentions, salvage, within

    salvaged = {
        id(doc): found
        for doc in documents
        if doc.kind in KINDS and id(doc) not in valid_ids
        if (found := salvage(doc, errors_of[id(doc)])) is not None
    }
    broken_defaults = [
        doc for doc in documents if doc.kind == "Defaults" and id(doc) not in valid_ids
    ]
    if not salvaged or any(id(doc) not in salvaged for doc in broken_defaults):
        return []  # nothing read again, or a Defaults document unreadable still
    # What every job lacks: the fields set aside in the Defaults.
    lacking = frozenset().union(*(salvaged[id(doc)].unknown for doc in broken_defaults))
    readable = [salvaged[id(doc)].document if id(doc) in salvaged else doc for doc in documents]
    now_valid = [
        read
        for doc, read in zip(documents, readable, strict=True)
        if id(doc) in valid_ids or id(doc) in salvaged
    ]
    # The Job and Workflow documents the run above did not build, and what each lacks
    # (a flow's steps take nothing from the Defaults: only its own fields set aside).
    pending = [
        (doc, lacking | (salvaged[id(doc)].unknown if id(doc) in salvaged else frozenset()))
        for doc in documents
        if doc.kind == "Job" and (id(doc) in salvaged or (broken_defaults and id(doc) in valid_ids))
    ] + [
        (doc, salvaged[id(doc)].unknown)
        for doc in documents
        if doc.kind == "Workflow" and id(doc) in salvaged
    ]
    if not pending:
        return []
    defaults = [doc for doc in now_valid if doc.kind == "Defaults"]
    jobs, flows = _built(now_valid, defaults)
    context = Context(
        documents=readable, valid=now_valid, jobs=jobs, check_imports=check_imports, workflows=flows
    )
    return [
        diagnostic
        for diagnostic in check(context)
        if any(
            within(diagnostic, doc, documents) and not mentions(diagnostic, unknown)
            for doc, unknown in pending
        )
    ]


def _drop_superseded(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """A YAML 1.1 warning on a duration is superseded by the duration error at the same spot."""
    durations = {d.location for d in diagnostics if d.code == DURATION_FORMAT.id}
    return [
        d for d in diagnostics if not (d.code == YAML11_AMBIGUOUS.id and d.location in durations)
    ]


def load_checked(paths: Sequence[str | Path]) -> Validation:
    """Validate the sheets under ``paths``; raises :class:`SheetError` on any error."""
    result = validate_sheets(paths)
    errors = [d for d in result.diagnostics if d.severity == "error"]
    if errors:
        raise SheetError.from_diagnostics(errors, path=shown_path)
    return result


def load_documents(paths: Sequence[str | Path]) -> list[Document]:
    """The documents under ``paths``, checked; raises :class:`SheetError` on any error."""
    return load_checked(paths).documents


def load_registry(paths: Sequence[str | Path]) -> Registry:
    """Load, validate and build the sheets under ``paths`` (files or folders).

    Raises :class:`~jobdef.errors.SheetError` listing every finding when any
    sheet has an error.
    """
    from jobdef.sheets.build import build_registry  # as in _built: loaded when used

    checked = load_checked(paths)
    return build_registry(checked.documents, checked.jobs)
