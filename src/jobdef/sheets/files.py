"""Reading and writing the project's files without following a symlink.

A pull request can put a symlink where jobdef reads a sheet or a generated page,
or where it writes one, and a FIFO or a device where it expects a file. So:

- :func:`read_regular` opens with ``O_NOFOLLOW | O_NONBLOCK`` and checks with
  ``fstat`` that it holds a regular file before it reads a byte: a symlink, a
  FIFO (which would block the reader) or a device is refused with
  :class:`RefusedFile`, an ``OSError`` whose ``strerror`` says why and what to do.
- :func:`write_atomic` writes a temporary file created with ``O_EXCL |
  O_NOFOLLOW`` in the target's folder, then renames it onto the target: a
  symlink at the target is replaced, never written through, and a reader never
  sees half a file. Every file jobdef writes (docs, TSV, ``jobdef new``) goes
  through it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class RefusedFile(OSError):
    """A path jobdef will not read: a symlink, or not a regular file."""


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def refused(path: str | Path, kind: str) -> RefusedFile:
    """The error for ``path``, which is ``kind`` (``"a symlink"``, ``"a FIFO"``...)."""
    if kind == "a symlink":
        hint = "jobdef never follows symlinks; put the file itself there"
    else:
        hint = "jobdef reads regular files only; put a file there or remove it"
    return RefusedFile(errno.EINVAL, f"is {kind}, not read; {hint}", str(path))


def check_not_symlink(path: str | Path) -> None:
    """Raise :class:`RefusedFile` when ``path`` itself is a symlink (a folder named to read)."""
    if os.path.islink(path):
        raise refused(path, "a symlink")


def read_regular(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (at most ``limit + 1`` of them when
    ``limit`` is given, so a caller can tell a file over its limit).

    Raises :class:`RefusedFile` for a symlink or a file that is not regular, without
    reading it, and ``OSError`` (``FileNotFoundError``...) when it cannot be opened.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _BINARY)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.EMLINK and os.path.islink(path)):
            raise refused(path, "a symlink") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise refused(path, _kind(mode))
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as stream:
            return stream.read() if limit is None else stream.read(limit + 1)
    finally:
        os.close(fd)


def read_text(path: str | Path) -> str | None:
    """The UTF-8 text of the regular file at ``path``, or None when there is none."""
    try:
        return read_regular(path).decode("utf-8")
    except FileNotFoundError:
        return None


def write_atomic(path: str | Path, data: bytes, *, replace: bool = True) -> None:
    """Write ``data`` to ``path`` through a new temporary file in the same folder.

    ``replace=False`` never overwrites: an existing ``path`` (a symlink included)
    raises ``FileExistsError`` and is left as it is. The new file gets the mode a
    plain ``open`` would give it (``0o666`` less the umask), or the mode of the
    regular file it replaces. Raises ``OSError`` when the folder cannot be written;
    a target that is a folder raises ``IsADirectoryError`` before anything is written.
    """
    target = Path(path)
    if target.is_dir() and not target.is_symlink():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
    import secrets  # here, not at the top: reading sheets should not pay for hashlib

    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY
    fd = -1  # the loop below only ends once it has opened the file
    while True:
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
            break
        except FileExistsError:  # a name taken (or planted): draw another
            continue
    try:
        try:
            current = os.lstat(target)
            if stat.S_ISREG(current.st_mode):
                os.fchmod(fd, stat.S_IMODE(current.st_mode))
        except FileNotFoundError:
            pass
        with os.fdopen(fd, "wb", closefd=False) as stream:
            stream.write(data)
        os.close(fd)
        fd = -1
        if replace:
            os.replace(tmp, target)
        else:
            _link_new(tmp, target, data)
    finally:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):  # gone once renamed or linked
            os.unlink(tmp)


def _link_new(tmp: Path, target: Path, data: bytes) -> None:
    """Give the written ``tmp`` the name ``target``, which must not exist (a symlink
    there counts): a hard link, or on a file system without them (EPERM, ENOTSUP), a
    new file created with ``O_EXCL``, which does not follow a symlink either."""
    try:
        os.link(tmp, target, follow_symlinks=False)  # EEXIST if anything is there
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o666)
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)


def project_root(start: Path | None = None) -> Path:
    """The folder paths are shown relative to: the one holding the nearest pyproject.toml
    when it has a ``[tool.jobdef]`` table, else the working directory (``start``)."""
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            import tomllib  # here: a project without a pyproject.toml never needs it

            try:
                tool = tomllib.loads(read_regular(candidate).decode("utf-8")).get("tool", {})
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                return here  # the configuration says what is wrong with it
            return folder if "jobdef" in tool else here
    return here


def relative_path(file: str, root: str | Path) -> str | None:
    """``file`` relative to ``root`` with ``/`` separators, or None when it is outside.

    The folders' links are resolved (the root may be found through a resolved working
    directory), not the file's: a symlinked sheet is shown where it was found.
    """
    folder, name = os.path.split(os.path.abspath(file))
    try:
        relative = os.path.relpath(
            os.path.join(os.path.realpath(folder), name), os.path.realpath(root)
        )
    except ValueError:  # another drive
        return None
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return None
    return relative.replace(os.sep, "/")


def shown_path(file: str, root: str | Path | None = None) -> str:
    """``file`` as messages show it: relative to the project root when inside it."""
    relative = relative_path(file, project_root() if root is None else root)
    return file if relative is None else relative
