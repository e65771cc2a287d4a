"""The two sides of a review: a folder of sheets, or the same folder at a git revision.

``git:REV`` (``git:main``, ``git:HEAD~1``) reads the sheets of that revision
straight from the object store (``git ls-tree`` and ``git cat-file``), without
a checkout, into a temporary folder that is gone once the registry is built.
``git:REV:PATH`` names the folder inside the repository explicitly.

Both sides are loaded with :func:`jobdef.sheets.pipeline.load_registry`, so the diff
sees effective policies, and every file name is rewritten to the path a reader
knows (``jobdefs/defaults.yaml``), never the temporary one.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from jobdef.errors import JobdefError, UsageError
from jobdef.policy.model import Origin
from jobdef.policy.registry import Registry
from jobdef.policy.values import freeze
from jobdef.sheets.pipeline import load_registry

GIT_PREFIX = "git:"
SHEET_SUFFIXES = (".yaml", ".yml")


class RevisionError(JobdefError):
    """A git revision could not be read; check the name with `git log --oneline`."""


@dataclass(frozen=True)
class Snapshot:
    """One side of a diff: what the user wrote (``label``) and the effective policies."""

    label: str
    registry: Registry
    files: int


def is_git_spec(spec: str) -> bool:
    return spec.startswith(GIT_PREFIX)


def _git(args: Sequence[str], cwd: Path, stdin: bytes | None = None) -> bytes:
    if shutil.which("git") is None:
        raise UsageError("git is not installed; compare two folders instead of git: revisions")
    result = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False)
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RevisionError(
            f"git {' '.join(args[:2])} failed: {detail[-1] if detail else 'no output'}"
        )
    return result.stdout


def git_toplevel(start: Path) -> Path:
    """The root of the git work tree that holds ``start``."""
    try:
        out = _git(["rev-parse", "--show-toplevel"], cwd=start)
    except RevisionError:
        raise UsageError(
            f"{start} is not inside a git repository; run jobdef diff in one, "
            "or compare two folders instead of git: revisions"
        ) from None
    return Path(out.decode().strip())


def resolve_folder(spec: str, sheets: Path, project_root: Path) -> Path:
    """The sheets folder that a folder argument stands for.

    A folder that holds the configured sheets folder at the same place as the
    project root does (``.`` in a project whose sheets are in ``jobdefs/``)
    stands for that sheets folder; any other folder is read as it is.
    """
    folder = Path(spec)
    if not folder.exists():
        raise UsageError(
            f"{spec}: no such folder; give a folder of sheets or a git revision such as git:HEAD"
        )
    try:
        inner = sheets.resolve().relative_to(project_root.resolve())
    except ValueError:
        return folder
    candidate = folder / inner
    if inner != Path() and candidate.is_dir():
        return candidate
    return folder


def _relabel(registry: Registry, rename: Callable[[str], str]) -> Registry:
    """The same registry with every file name passed through ``rename``.

    Each distinct file name is renamed once: a registry holds one origin per
    field of every job, all pointing at a handful of files.
    """
    rename = functools.cache(rename)

    def origins(mapping: Mapping[str, Origin]) -> Mapping[str, Origin]:
        frozen: Mapping[str, Origin] = freeze(
            {k: replace(o, file=rename(o.file)) for k, o in mapping.items()}
        )
        return frozen

    return Registry(
        jobs=freeze(
            {
                n: replace(j, file=rename(j.file), origins=origins(j.origins))
                for n, j in registry.jobs.items()
            }
        ),
        channels=freeze(
            {
                n: replace(c, file=rename(c.file), origins=origins(c.origins))
                for n, c in registry.channels.items()
            }
        ),
        queues=freeze({n: replace(q, file=rename(q.file)) for n, q in registry.queues.items()}),
        workflows=freeze(
            {
                n: replace(w, file=rename(w.file), origins=origins(w.origins))
                for n, w in registry.workflows.items()
            }
        ),
    )


def _display(path: Path, cwd: Path) -> str:
    """``path`` as a reader finds it from the working directory."""
    return os.path.relpath(path.resolve(), cwd.resolve())


def load_folder(spec: str, folder: Path, cwd: Path) -> Snapshot:
    """The effective policies of the sheets in ``folder`` as they are on disk."""
    files = (
        [p for p in folder.rglob("*") if p.suffix in SHEET_SUFFIXES]
        if folder.is_dir()
        else [folder]
    )
    registry = _relabel(_load(spec, [folder]), lambda f: _display(Path(f), cwd))
    return Snapshot(label=spec, registry=registry, files=len(files))


def _load(
    label: str, paths: Sequence[Path], temp_root: Path | None = None, shown: str = ""
) -> Registry:
    try:
        return load_registry(paths)
    except JobdefError as exc:
        message = exc.message
        if temp_root is not None:
            message = message.replace(str(temp_root) + os.sep, shown)
        raise type(exc)(f"{label}: {message}") from None


def parse_git_spec(spec: str) -> tuple[str, str | None]:
    """``git:REV`` -> (REV, None); ``git:REV:PATH`` -> (REV, PATH)."""
    rest = spec[len(GIT_PREFIX) :]
    rev, sep, path = rest.partition(":")
    if not rev or rev.startswith("-"):
        raise UsageError(f"{spec}: name a revision after git:, such as git:HEAD or git:main")
    return rev, (path or ".") if sep else None


def _tree_files(rev: str, inner: str, toplevel: Path) -> list[tuple[str, str]]:
    """(object id, repo-relative path) of every sheet file under ``inner`` at ``rev``."""
    out = _git(["ls-tree", "-r", "-z", "--full-tree", rev, "--", inner], cwd=toplevel)
    files = []
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.decode("utf-8", "surrogateescape").partition("\t")
        mode, kind, oid = meta.split()
        # A symbolic link's blob is the link target, not a sheet.
        if kind == "blob" and mode != "120000" and name.endswith(SHEET_SUFFIXES):
            files.append((oid, name))
    return files


def _read_blobs(oids: Sequence[str], toplevel: Path) -> list[bytes]:
    """The contents of ``oids``, in one ``git cat-file --batch`` call."""
    out = _git(
        ["cat-file", "--batch"], cwd=toplevel, stdin="".join(f"{o}\n" for o in oids).encode()
    )
    blobs: list[bytes] = []
    pos = 0
    for _ in oids:
        header_end = out.index(b"\n", pos)
        size = int(out[pos:header_end].split()[2])
        start = header_end + 1
        blobs.append(out[start : start + size])
        pos = start + size + 1  # the content is followed by a newline
    return blobs


def load_git(spec: str, sheets: Path, cwd: Path) -> Snapshot:
    """The effective policies of the sheets folder ``sheets`` at the revision in ``spec``."""
    rev, explicit = parse_git_spec(spec)
    toplevel = git_toplevel(cwd)
    try:
        commit = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=toplevel)
    except RevisionError:
        raise RevisionError(
            f"{spec}: {rev!r} is not a revision of {toplevel}; "
            "use a branch, tag or commit that `git log --oneline` shows, such as git:HEAD~1"
        ) from None
    if explicit is not None:
        inner = Path(explicit)
    else:
        try:
            inner = sheets.resolve().relative_to(toplevel.resolve())
        except ValueError:
            raise UsageError(
                f"{spec}: the sheets folder {sheets} is outside the repository {toplevel}; "
                "write git:REV:PATH with PATH inside the repository"
            ) from None
    files = _tree_files(commit.decode().strip(), inner.as_posix() or ".", toplevel)
    with tempfile.TemporaryDirectory(prefix="jobdef-diff-") as temp:
        root = Path(temp)
        for (_, name), blob in zip(
            files, _read_blobs([o for o, _ in files], toplevel), strict=True
        ):
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob)
        registry = (
            _load(spec, [root / inner], root, f"git:{rev}:")
            if files
            else Registry(jobs=freeze({}), channels=freeze({}), queues=freeze({}))
        )

        def rename(file: str) -> str:
            relative = Path(file).resolve().relative_to(root.resolve())
            return _display(toplevel / relative, cwd)

        registry = _relabel(registry, rename)
    return Snapshot(label=spec, registry=registry, files=len(files))


def load_side(
    spec: str, *, sheets: Path, project_root: Path, cwd: Path, git_folder: Path | None = None
) -> Snapshot:
    """A folder or a ``git:`` revision as a snapshot.

    ``git_folder`` is the folder that a bare ``git:REV`` reads (the other side's
    folder, so both sides cover the same sheets); it defaults to ``sheets``.
    """
    if is_git_spec(spec):
        return load_git(spec, git_folder or sheets, cwd)
    return load_folder(spec, resolve_folder(spec, sheets, project_root), cwd)
