"""Temp file + rename, so a failed run never leaves a half-written or clobbered output."""
from __future__ import annotations

import os
import pathlib
import tempfile


def write_atomic(path: pathlib.Path, data) -> None:
    """data: bytes, or anything with write_to(file) (an OmImage streams its parts)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            if hasattr(data, "write_to"):
                data.write_to(f)
            else:
                f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
