"""An .om kept open and memory-mapped: its large WEIGHTS_DATA partitions are never read at load.

The loader (loader.py) checks every offset and size of the partition tables against the file's size before a
partition becomes a view of the mapping. The mapping is read-only (PROT_READ): a page is read from the file
when something touches it, so a timing-only run (om-run --no-compute) never reads the weights, and the pages
a numeric run touches stay the kernel's page cache (reclaimable), not a copy on the heap.

Simulated device memory is writable: each one gets its own private mapping of the weights (MAP_PRIVATE,
copy-on-write), so a page a kernel writes is copied for that memory only, and neither the file nor the
read-only mapping nor another simulation sees the write.

A file truncated by someone else while it is mapped faults (SIGBUS) when a page past its new end is touched,
as with any mapped file: om-run checks the size when it maps the file, not at every access.
"""
from __future__ import annotations

import mmap
import os
from typing import BinaryIO

import numpy as np


class MappedFile:
    """An open .om of `size` bytes (fstat's at open) and its read-only mapping; the file stays open for the
    private mappings of the device memories (the path may be gone or name another file by then)."""

    def __init__(self, f: BinaryIO, size: int):
        self.f, self.size = f, size
        self.map = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)   # OSError / ValueError: the caller's
        if os.fstat(f.fileno()).st_size != size:
            self.map.close()
            raise OSError(f"the file changed size while it was opened ({size} -> {os.fstat(f.fileno()).st_size} B)")

    def _check(self, offset: int, size: int) -> None:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise ValueError(f"{size} bytes at offset {offset} are outside the file's {self.size}")

    def view(self, offset: int, size: int) -> memoryview:
        """Read-only bytes of the file, as a view of the mapping (nothing is read until they are touched)."""
        self._check(offset, size)
        return memoryview(self.map)[offset:offset + size]

    def private(self, offset: int, size: int) -> np.ndarray:
        """A writable uint8 array of those bytes, mapped copy-on-write (MAP_PRIVATE) from the file."""
        self._check(offset, size)
        start = offset - offset % mmap.ALLOCATIONGRANULARITY
        m = mmap.mmap(self.f.fileno(), size + offset - start, access=mmap.ACCESS_COPY, offset=start)
        return np.frombuffer(m, np.uint8, size, offset - start)


class MappedWeights:
    """A model's WEIGHTS_DATA left in the mapped file: ModelBase.weights is its read-only view; each simulated
    device memory loads it with private() (device_memory.load_weights)."""

    def __init__(self, file: MappedFile, offset: int, size: int):
        self.file, self.offset, self.size = file, offset, size

    def view(self) -> memoryview:
        return self.file.view(self.offset, self.size)

    def private(self) -> np.ndarray:
        return self.file.private(self.offset, self.size)

    def __repr__(self) -> str:
        return f"MappedWeights({self.size} B at offset {self.offset})"
