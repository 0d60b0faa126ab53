"""Memory hazards. A static sweep in program order (the ModelTaskDef order, a valid sequential order) finds,
for every access, the task that produced the bytes it reads and the tasks that still read bytes it
overwrites; at run time a read that starts before its producer finished, or a write that starts before
those readers finished, is a hazard naming both tasks."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field


@dataclass
class Access:
    task: int
    lo: int
    hi: int
    write: bool


@dataclass
class Deps:
    producers: list[tuple[int, int, int]] = field(default_factory=list)  # (producer task, lo, hi) of reads
    readers: list[tuple[int, int, int]] = field(default_factory=list)    # (earlier reader, lo, hi) of writes
    writers: list[tuple[int, int, int]] = field(default_factory=list)    # (previous writer, lo, hi) of writes


class IntervalMap:
    """Non-overlapping byte segments [lo, hi) with their last writer and the readers since."""

    def __init__(self):
        self.starts: list[int] = []
        self.segs: list[list] = []  # [lo, hi, writer, readers]

    def _split(self, at: int) -> None:
        i = bisect.bisect_right(self.starts, at) - 1
        if i >= 0:
            lo, hi, w, r = self.segs[i]
            if lo < at < hi:
                self.segs[i] = [lo, at, w, list(r)]
                self.segs.insert(i + 1, [at, hi, w, list(r)])
                self.starts.insert(i + 1, at)

    def overlapping(self, lo: int, hi: int) -> list[list]:
        i = max(bisect.bisect_right(self.starts, lo) - 1, 0)
        out = []
        while i < len(self.segs) and self.segs[i][0] < hi:
            if self.segs[i][1] > lo:
                out.append(self.segs[i])
            i += 1
        return out

    def cover(self, lo: int, hi: int) -> list[list]:
        """Segments exactly covering [lo, hi): split at the ends, fill gaps with unwritten segments."""
        self._split(lo)
        self._split(hi)
        out, cur = [], lo
        for seg in self.overlapping(lo, hi):
            if seg[0] > cur:
                out.append(self._insert([cur, seg[0], None, []]))
            out.append(seg)
            cur = seg[1]
        if cur < hi:
            out.append(self._insert([cur, hi, None, []]))
        return out

    def _insert(self, seg: list) -> list:
        i = bisect.bisect_left(self.starts, seg[0])
        self.starts.insert(i, seg[0])
        self.segs.insert(i, seg)
        return seg

    def read(self, task: int, lo: int, hi: int) -> list[tuple[int, int, int]]:
        found = []
        for seg in self.cover(lo, hi):
            if seg[2] is not None and seg[2] != task:
                found.append((seg[2], max(lo, seg[0]), min(hi, seg[1])))
            seg[3].append(task)
        return found

    def write(self, task: int, lo: int, hi: int) -> tuple[list, list]:
        readers, writers = [], []
        for seg in self.overlapping(lo, hi):
            readers += [(r, max(lo, seg[0]), min(hi, seg[1])) for r in seg[3] if r != task]
            if seg[2] is not None and seg[2] != task:
                writers.append((seg[2], max(lo, seg[0]), min(hi, seg[1])))
        self._split(lo)
        self._split(hi)
        i = bisect.bisect_left(self.starts, lo)
        j = bisect.bisect_left(self.starts, hi)
        del self.starts[i:j]
        del self.segs[i:j]
        self.starts.insert(i, lo)
        self.segs.insert(i, [lo, hi, task, []])
        return readers, writers


def analyse(accesses: dict[int, list[Access]], order: list[int]) -> dict[int, Deps]:
    imap = IntervalMap()
    deps: dict[int, Deps] = {}
    for t in order:
        d = Deps()
        for a in accesses.get(t, ()):
            if not a.write:
                d.producers += imap.read(t, a.lo, a.hi)
        for a in accesses.get(t, ()):
            if a.write:
                r, w = imap.write(t, a.lo, a.hi)
                d.readers += r
                d.writers += w
        if d.producers or d.readers or d.writers:
            deps[t] = d
    return deps


@dataclass
class Hazard:
    kind: str        # "read-before-write" | "write-before-read" | "write-after-write" | "prefetch"
    task: int
    other: int
    detail: str

    def as_dict(self) -> dict:
        return {"kind": self.kind, "task": self.task, "other_task": self.other, "detail": self.detail}


def check_start(task: int, start: int, deps: Deps | None, end: dict[int, int], describe) -> list[Hazard]:
    if deps is None:
        return []
    found = []
    for p, lo, hi in deps.producers:
        if end.get(p, 1 << 62) > start:
            found.append(Hazard("read-before-write", task, p,
                                f"task {task} ({describe(task)}) reads [0x{lo:X}, 0x{hi:X}) at {start} ns before its "
                                f"producer task {p} ({describe(p)}) finished"))
    for r, lo, hi in deps.readers:
        if end.get(r, 1 << 62) > start:
            found.append(Hazard("write-before-read", task, r,
                                f"task {task} ({describe(task)}) overwrites [0x{lo:X}, 0x{hi:X}) at {start} ns while "
                                f"task {r} ({describe(r)}) has still to read it"))
    for w, lo, hi in deps.writers:
        if end.get(w, 1 << 62) > start:
            found.append(Hazard("write-after-write", task, w,
                                f"task {task} ({describe(task)}) writes [0x{lo:X}, 0x{hi:X}) at {start} ns before "
                                f"task {w} ({describe(w)}) finished writing it"))
    return found
