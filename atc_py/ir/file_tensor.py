"""A constant whose bytes stay in a file (a model's external data): mapped each time it is read, one tensor at
a time, so a model larger than memory compiles.

Each load() opens the file, checks the tensor's span against the file's size as it is now (the file may
have been cut since the model was parsed: mapping past its end would kill the process with SIGBUS when the
bytes are touched) and maps just that span read-only. The array returned is a view of the mapping; the
mapping (and whatever pages of it were read, which count as the process's memory) goes away with the
last view, so a pass that reads a sample of a weight, or the writer that copies it into the .om, holds it
only while it works on it.
"""
from __future__ import annotations

import math
import mmap
import os
from dataclasses import dataclass

import numpy as np

from ..common.errors import AtcError


@dataclass(frozen=True)
class FileTensor:
    path: str            # the data file (already confined to the model's folder by the frontend)
    offset: int
    shape: tuple[int, ...]
    dtype: str           # numpy name; native little-endian
    name: str            # the tensor's name in the model, for errors
    model: str           # the model file, for errors

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize

    def _fail(self, reason: str) -> AtcError:
        return AtcError("E10041", path=self.model, reason=reason)

    def load(self) -> np.ndarray:
        """The tensor as a read-only array over the mapped file."""
        nbytes, end = self.nbytes, self.offset + self.nbytes
        where = f"external data '{os.path.basename(self.path)}' of tensor '{self.name}'"
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise self._fail(f"cannot open {where} ({exc.strerror or exc})") from None
        try:
            size = os.fstat(fd).st_size
            if self.offset < 0 or end > size:
                raise self._fail(f"{where} needs bytes {self.offset}..{end} of the file, which has {size} bytes "
                                 "(truncated?)")
            if nbytes == 0:
                return np.zeros(self.shape, self.dtype)
            start = self.offset - self.offset % mmap.ALLOCATIONGRANULARITY
            try:
                m = mmap.mmap(fd, end - start, offset=start, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as exc:
                raise self._fail(f"cannot map {where} ({exc})") from None
        finally:
            os.close(fd)
        count = nbytes // np.dtype(self.dtype).itemsize
        return np.frombuffer(m, self.dtype, count, self.offset - start).reshape(self.shape)
