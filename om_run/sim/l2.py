"""The memory system under the cores: an L2 of the SoC's size over the device DRAM, and how a kernel's bytes
split between them.

* L2 residency: page-granular LRU over device addresses. What a kernel reads is found there (hit) or fetched
  from DRAM (miss) and stays; what it writes lands there dirty (write-back, write-allocate: ASSUMED, the
  public material does not say) and reaches DRAM only when evicted, charged to the kernel whose accesses
  evicted it. Pages are fine enough (1/1024 of the L2, at least 64 KiB) that time is continuous in size: an op
  one element bigger than the L2 costs one page more, not a cliff.
* A kernel's traffic: Work.bytes is everything its blocks move between global memory and the cores. Its
  inputs and outputs (the address ranges of its args) are the compulsory part; what Work.bytes counts beyond
  them are re-reads (a GEMM's A and B strips, a norm's second pass), which hit L2 while their reuse window
  (Work.reuse_window: what the running blocks touch between two reads of the same bytes; by default the
  kernel's whole footprint) fits in it and otherwise miss in proportion to the overflow.
Every byte crosses the L2 (chip L2 bandwidth); misses and write-backs also cross the DRAM interface (chip DRAM
bandwidth). The bandwidths are shared by all running kernels (machine.py).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

MIN_PAGE = 64 << 10


@dataclass(slots=True)
class Traffic:
    """One kernel's bytes: all of them cross the L2, `dram` also cross the DRAM interface; `cold_in` are the
    input bytes the L2 did not hold and `out_overflow` the output bytes that cannot stay in it (the roofline's
    compulsory DRAM bytes, om_run/sim/roofline.py)."""
    total: int = 0
    dram: int = 0
    hits: int = 0
    cold_in: int = 0
    out_overflow: int = 0
    writeback: int = 0
    compulsory: int = 0     # its inputs and outputs (what Work.bytes counts beyond them are re-reads)

    @property
    def compulsory_dram(self) -> int:
        return self.cold_in + self.out_overflow

    @property
    def dram_share(self) -> float:
        return self.dram / self.total if self.total else 0.0


def merge(ranges) -> list[tuple[int, int]]:
    """Sorted, non-overlapping union of [lo, hi) ranges."""
    out: list[list[int]] = []
    for lo, hi in sorted(r for r in ranges if r[1] > r[0]):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(a, b) for a, b in out]


class L2Cache:
    """`across_kernels` False is a build with --buffer_optimize=off_optimize: GE keeps no tensor in the L2 from one
    kernel to the next, so every kernel reads its inputs from DRAM and writes its outputs through to it (re-reads
    inside one kernel still hit while their window fits)."""

    def __init__(self, capacity: int, across_kernels: bool = True):
        self.capacity = max(1, capacity)
        self.across_kernels = across_kernels
        self.page = max(MIN_PAGE, self.capacity // 1024)
        self.pages = max(1, self.capacity // self.page)
        self.lru: OrderedDict[int, bool] = OrderedDict()   # page -> dirty, least recently used first

    def _span(self, lo: int, hi: int) -> range:
        return range(lo // self.page, (hi - 1) // self.page + 1)

    def _overlap(self, p: int, lo: int, hi: int) -> int:
        return min(hi, (p + 1) * self.page) - max(lo, p * self.page)

    def resident(self, lo: int, hi: int) -> int:
        """Bytes of [lo, hi) the L2 holds."""
        span = self._span(lo, hi)
        lru, page = self.lru, self.page
        if len(span) > len(lru):
            return sum(self._overlap(p, lo, hi) for p in lru if p in span)
        p0, p1 = span.start, span.stop - 1
        if p0 == p1:
            return hi - lo if p0 in lru else 0
        # the pages between the two ends are whole: count them, then add the ends' parts
        inner = sum(1 for p in range(p0 + 1, p1) if p in lru) * page
        return inner + ((p0 + 1) * page - lo if p0 in lru else 0) + (hi - p1 * page if p1 in lru else 0)

    def _touch(self, lo: int, hi: int, dirty: bool) -> int:
        """Make [lo, hi) most recently used (dirty if written); returns the dirty bytes evicted. Of a range
        larger than the L2 only its last `pages` pages can stay: the ones before are evicted at once."""
        lru, page = self.lru, self.page
        p0, p1 = lo // page, (hi - 1) // page
        evicted = 0
        if p0 == p1:   # within one page: the common small tensor
            lru[p0] = lru.pop(p0, False) or dirty
            if len(lru) > self.pages and lru.popitem(last=False)[1]:
                evicted += page   # one page in, at most one out
            return evicted
        if p1 - p0 + 1 > self.pages:
            for p in range(p0, p1 + 1 - self.pages):
                was = lru.pop(p, None)
                if dirty or was:
                    evicted += page
            p0 = p1 + 1 - self.pages
        pop = lru.pop
        for p in range(p0, p1 + 1):
            lru[p] = pop(p, False) or dirty
        while len(lru) > self.pages:
            if lru.popitem(last=False)[1]:
                evicted += page
        return evicted

    def _hits(self, lo: int, hi: int) -> int:
        p = lo // self.page
        if p == (hi - 1) // self.page:       # within one page: the common small tensor
            return hi - lo if p in self.lru else 0
        return self.resident(lo, hi)

    def access(self, reads, writes, moved: int, window: int = 0) -> Traffic:
        """A kernel that reads `reads`, writes `writes` (merged, sorted [lo, hi) ranges: merge()) and moves
        `moved` bytes in all; its re-reads need `window` bytes resident (0: its inputs and outputs)."""
        comp_in = comp_out = hit_in = 0
        if not self.across_kernels:
            self.lru.clear()          # nothing a previous kernel left is reused
        page, lru = self.page, self.lru
        for lo, hi in reads:
            comp_in += hi - lo
            p = lo // page
            if p == (hi - 1) // page:       # within one page: the common small tensor
                if p in lru:
                    hit_in += hi - lo
            else:
                hit_in += self.resident(lo, hi)
        for lo, hi in writes:
            comp_out += hi - lo
        comp = comp_in + comp_out
        scale = min(1.0, moved / comp) if comp else 1.0          # an op that reads part of its inputs
        rereads = max(0, moved - comp)
        window = window or comp
        overflow = max(0, window - self.capacity) / window if window else 1.0
        writeback = 0
        pages = self.pages
        for ranges, dirty in ((reads, False), (writes, self.across_kernels)):
            for lo, hi in ranges:
                if scale < 1.0 and hi - lo > page:
                    # an op that moves part of its tensors (a gather's rows, a KV cache's written slots) brings
                    # that share of their pages through the L2, not every page of them
                    hi = lo + max(page, int((hi - lo) * scale))
                p = lo // page
                if p == (hi - 1) // page:   # _touch's one-page case, inline (the common small tensor)
                    lru[p] = lru.pop(p, False) or dirty
                    if len(lru) > pages and lru.popitem(last=False)[1]:
                        writeback += page
                else:
                    writeback += self._touch(lo, hi, dirty)
        cold = int((comp_in - hit_in) * scale)
        dram = cold + int(rereads * overflow) + writeback
        if not self.across_kernels:
            dram += int(comp_out * scale)          # written through
        return Traffic(moved, dram, int(hit_in * scale), cold, int(max(0, comp_out - self.capacity) * scale),
                       writeback, int(comp * scale))

    def invalidate(self, lo: int, hi: int) -> None:
        """Bytes rewritten behind the L2's back (a host-to-device copy lands in DRAM): drop them, no write-back."""
        for p in self._span(lo, hi):
            self.lru.pop(p, None)


def cold(moved: int) -> Traffic:
    """A kernel whose addresses are unknown (host-launched, hand-built): every byte comes from DRAM."""
    return Traffic(total=moved, dram=moved, cold_in=moved, compulsory=moved)
