"""Writing a file the user named, without ever leaving a half-written output or clobbering something else.

* A regular file (or a new one) is written through a temp file in the same folder and renamed over it:
  a failed run leaves the old file as it was. A new file gets 0666 minus the umask (as open() would give
  it), an existing one keeps its mode.
* A symlink is followed: its target is written (and the link stays a link).
* A character device (/dev/null, a terminal) is written through, never replaced by a regular file.
* A FIFO, a socket, a block device or a folder is refused with a clear error.
Every failure is E13004 (GE's "Failed to write file %s. Reason: %s.").

A file a tool names itself inside its output folder (om-run's outputs and profile, om-sweep's records and
tables) is written with write_in_folder: a symlink planted at that name is replaced by the new file, never
followed, so nothing outside the folder is written through it.
"""
from __future__ import annotations

import os
import pathlib
import re
import stat
import tempfile
from typing import Any, Callable

from .errors import AtcError

_UMASK = os.umask(0)
os.umask(_UMASK)


def _fail(path, reason: str) -> AtcError:
    return AtcError("E13004", file=str(path), errmsg=reason)


def _writer(data: Any, progress=None) -> Callable:
    """data: bytes, an object with write_to(file, progress) (an OmImage streams its parts), or a callable(file)."""
    if callable(data):
        return data
    if hasattr(data, "write_to"):
        return lambda f: data.write_to(f, progress)
    return lambda f: f.write(data)


def _write_through(target: str, data: Any, path, progress=None, follow_links: bool = True) -> None:
    """A character device: written in order (an image that cannot seek there writes its header first)."""
    flags = os.O_WRONLY | (0 if follow_links else os.O_NOFOLLOW)
    try:
        with open(os.open(target, flags), "wb", buffering=0) as f:
            _writer(data, progress)(f)
    except OSError as exc:
        raise _fail(path, exc.strerror or str(exc)) from None


def _existing(target: str, path, follow_links: bool) -> os.stat_result | None:
    """What is at the target now; a symlink not to be followed counts as nothing (the rename replaces it)."""
    try:
        st = os.stat(target) if follow_links else os.lstat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _fail(path, exc.strerror or str(exc)) from None
    return None if stat.S_ISLNK(st.st_mode) else st


def write_in_folder(path, data: Any, progress=None) -> None:
    """A file the tool names inside its own output folder: a planted symlink there is replaced, not followed."""
    write_atomic(path, data, progress, follow_links=False)


def write_atomic(path, data: Any, progress=None, follow_links: bool = True) -> None:
    """`progress` (atc_py/common/progress.py) is told the bytes an image writes. follow_links=False: see write_in_folder."""
    path = pathlib.Path(path)
    target = os.path.realpath(path) if follow_links else os.path.abspath(path)
    st = _existing(target, path, follow_links)
    mode = 0o666 & ~_UMASK
    if st is not None:
        if stat.S_ISCHR(st.st_mode):
            _write_through(target, data, path, progress, follow_links)
            return
        if stat.S_ISDIR(st.st_mode):
            raise _fail(path, "it is a directory")
        if not stat.S_ISREG(st.st_mode):
            kind = "FIFO" if stat.S_ISFIFO(st.st_mode) else "socket" if stat.S_ISSOCK(st.st_mode) else \
                "block device" if stat.S_ISBLK(st.st_mode) else "special file"
            raise _fail(path, f"it is a {kind}; only regular files and character devices are written")
        mode = stat.S_IMODE(st.st_mode)
    parent = os.path.dirname(target) or "."
    if not os.path.isdir(parent):
        raise _fail(path, "its directory does not exist")
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{os.path.basename(target)}.")
    except OSError as exc:
        raise _fail(path, exc.strerror or str(exc)) from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            _writer(data, progress)(f)
        os.replace(tmp, target)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _fail(path, exc.strerror or str(exc)) from None
        raise


def make_output_dir(path, what: str = "output") -> pathlib.Path:
    """A folder for outputs: created if missing; anything else at that path is an E13004."""
    d = pathlib.Path(path)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise _fail(path, f"the {what} path exists and is not a directory") from None
    except OSError as exc:
        raise _fail(path, f"cannot create the {what} directory ({exc.strerror or exc})") from None
    return d


def safe_stem(name: str, limit: int = 64) -> str:
    """A model name as part of a file name: letters, digits, '_', '-', '.' only, no leading dot, bounded
    length — a name stored in the .om never chooses a folder."""
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:limit].lstrip(".")
    return stem or "model"
