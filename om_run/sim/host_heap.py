"""The host heap om-run's kernels compute in: freed blocks kept for the next kernel, and pages touched at load.

Every kernel allocates its results and temporaries afresh (a few hundred KB to a few MB each for a CNN at batch 1).
glibc's malloc serves blocks that large with mmap, or trims them off the heap's top when freed, so the next kernel
gets fresh pages and faults on each one: a light ShuffleNet took ~1,900 minor page faults per execution, each a
trap to the kernel plus a page zeroed, and faults of threads in one process queue on the address space's lock.
`keep_freed_memory` raises both thresholds (mallopt) so freed blocks stay in the heap for reuse: measured on the
2-core VM, ShuffleNet went to 11-20 faults per execution and mostly 7-20 % less time; ResNet-50's time was mixed
(`python -m bench.host_heap`, docs/benchmarks.md).
`prefault` touches a block of heap at load and frees it, so the first execution finds its pages too.

glibc only, through ctypes (no compiled code of ours); elsewhere both are no-ops. Process-wide: om-run calls it at
its start; the Python API leaves the host process's allocator as it is unless asked.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

import numpy as np

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3   # mallopt's parameter numbers (glibc malloc.h)
MMAP_THRESHOLD = 32 << 20     # blocks below this come from the heap: glibc's own cap for its sliding threshold
#                               (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit); bigger ones (an LLM's widened weight) mmap
TRIM_THRESHOLD = 64 << 20     # the heap keeps up to this much free memory at its top instead of returning it
PREFAULT_CHUNK = 8 << 20      # prefault's blocks: under MMAP_THRESHOLD, so they are heap, not mmap
PREFAULT_BYTES = 24 << 20     # what warm() touches per computing thread: the first execution's page faults after
#                               keep_freed_memory were 8-14 MB for ResNet-50 and ShuffleNet at batch 1 (docs)

_kept: bool | None = None


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "gnu_get_libc_version") else None
    except OSError:
        return None


def keep_freed_memory() -> bool:
    """Freed blocks stay in the heap for the next kernel (glibc; once per process). True when it took effect."""
    global _kept
    if _kept is None:
        libc = _libc()
        _kept = bool(libc and libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
                     and libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1)
    return _kept


def heap_kept() -> bool:
    """Whether keep_freed_memory took effect in this process."""
    return bool(_kept)


def prefault(nbytes: int = PREFAULT_BYTES) -> None:
    """This thread's heap grown by `nbytes`, its pages touched and freed again (kept: keep_freed_memory), so a
    first execution's allocations find them. Without keep_freed_memory, freeing would give them back: nothing."""
    if not _kept or nbytes <= 0:
        return
    blocks = []
    left = int(nbytes)
    while left > 0:
        b = np.empty(min(left, PREFAULT_CHUNK), np.uint8)
        b.fill(0)
        blocks.append(b)
        left -= b.size
    del blocks
