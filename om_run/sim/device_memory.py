"""The bytes in device memory: the feature-map arena and the weight arena, addressed by the logical addresses
of the om (l2.py models the time those bytes take to move, not their values)."""
from __future__ import annotations

from bisect import bisect_left, insort

import numpy as np

from atc_py.ir.formats import to_device
from atc_py.ir.graph import TensorDesc


class MemoryFault(Exception):
    pass


def widen(view: np.ndarray) -> np.ndarray:
    """An fp16 array as exact fp32, read-only (what a cube kernel would compute from)."""
    arr = view.astype(np.float32)
    arr.flags.writeable = False
    return arr


def aligned(view: np.ndarray) -> np.ndarray:
    """A read-only copy of an array, aligned for its dtype."""
    arr = np.array(view, order="C")
    arr.flags.writeable = False
    return arr


# bytes of weights made ready for kernels (fp16 widened for the cube, misaligned ones copied) that a simulation
# keeps (WidenBudget). A numeric run holds om-run's own ~250 MB, the weights' pages (1x the .om) and
# min(2x the weights, this): within 1 GiB + 1.2x the .om whatever the model's size. Large enough for VGG-19's
# fp16 weights widened (574 MB): past the budget a weight is made again by every launch.
WIDEN_CACHE_BYTES = 768 << 20


def load_weights(weights, mapped=None) -> np.ndarray:
    """The weights in (simulated) device memory, once per loaded model: weights mapped from the .om
    (om_run/load/mapped.py) get a private copy-on-write mapping of the file (a page is read when a kernel touches
    it, copied only if one writes it); others are copied."""
    if mapped is not None:
        return mapped.private()
    return np.frombuffer(bytearray(weights), dtype=np.uint8)


class WidenBudget:
    """How many more bytes of prepared weights (cached_weight) a simulation may keep (shared by its memories)."""

    def __init__(self, nbytes: int = WIDEN_CACHE_BYTES):
        self.left = nbytes

    def take(self, nbytes: int) -> bool:
        if nbytes > self.left:
            return False
        self.left -= nbytes
        return True


def _covers(ranges: list, lo: int, hi: int) -> bool:
    """Whether the union of `ranges` covers [lo, hi)."""
    at = lo
    for a, b in sorted(ranges):
        if a > at:
            return False
        at = max(at, b)
        if at >= hi:
            return True
    return at >= hi


def shadow_key(d: TensorDesc) -> tuple:
    """What tells two descs of one tensor apart for the shadow (a plan computes it once per operand)."""
    return tuple(d.shape), d.dtype, d.format, d.origin_format, tuple(d.origin_shape or ())


REMNANT_BYTES = 256 << 20   # partly overwritten pending tensors kept unconverted, at most


class DeviceMemory:
    def __init__(self, fm_base: int, fm_size: int, weight_base: int, weights, widened: dict | None = None,
                 budget: WidenBudget | None = None):
        """weights: the model's bytes (copied), or a uint8 array already loaded (shared: the weights stay in
        device memory from one execution to the next, as after a model load). widened: a cache of fp16 weights
        widened to fp32 (and misaligned weights copied), shared the same way, holding at most what `budget`
        allows (see cached_weight)."""
        if not isinstance(weights, np.ndarray):
            weights = load_weights(weights)
        self.regions = [
            ("feature map", fm_base, np.zeros(fm_size, dtype=np.uint8)),
            ("weights", weight_base, weights),
        ]
        self.weight_base, self.weight_end = weight_base, weight_base + len(weights)
        self.widened = {} if widened is None else widened
        self.budget = WidenBudget() if budget is None else budget
        # address -> [end, desc key, array, desc, pending]: the framework-layout array of a device-format tensor a
        # kernel wrote there, while those bytes stay as written (every write drops what it overlaps): its reader
        # takes it instead of converting the bytes back (ir/formats.from_device). `pending`: the device bytes are
        # not written yet — made from the array (to_device) the moment anything reads them (materialize), so a
        # tensor only kernels read is never converted at all
        self.shadow: dict[int, list] = {}
        self.starts: list[int] = []      # the shadow's addresses, sorted (its entries never overlap each other)
        # pending tensors written over in part (memory reused): [address, end, desc, array, overwritten ranges];
        # no kernel takes them any more, but their other bytes are made if something reads them, until REMNANT_BYTES
        # of them are held (then the oldest are made at once)
        self.remnants: list[list] = []
        self.remnant_bytes = 0
        self.pending = 0

    def reset(self) -> None:
        """A new execution on the same loaded model: the feature map zeroed again (its pages stay mapped; a fresh
        arena per execution cost a page fault per 4 KiB written), the weights kept."""
        self.regions[0][2].fill(0)
        self.shadow.clear()
        self.starts.clear()
        self.remnants.clear()
        self.remnant_bytes = self.pending = 0

    @property
    def tracking(self) -> bool:
        """Whether any write must be told to the shadow (something is shadowed, or a remnant waits)."""
        return bool(self.shadow or self.remnants)

    def _store(self, address: int, desc: TensorDesc, logical: np.ndarray, skip=()) -> None:
        """A pending tensor's device bytes, made from its array now (but the ranges in `skip`, written since)."""
        buf, off = self._locate(address, desc.nbytes)
        raw = np.ascontiguousarray(to_device(logical, desc.format, desc.origin_format).astype(desc.dtype, copy=False))
        raw = raw.reshape(-1).view(np.uint8)
        keep = [(address, address + desc.nbytes)]
        for lo, hi in skip:
            keep = [r for a, b in keep for r in ((a, min(b, lo)), (max(a, hi), b)) if r[0] < r[1]]
        for a, b in keep:
            buf[off + a - address:off + b - address] = raw[a - address:b - address]
        self.pending -= 1

    def materialize(self, lo: int, hi: int) -> None:
        """Every pending tensor overlapping [lo, hi) gets its device bytes: something reads them."""
        if not self.pending:
            return
        for a in self._shadowed(lo, hi):
            e = self.shadow[a]
            if e[4]:
                self._store(a, e[3], e[2])
                e[4] = False
        for r in [r for r in self.remnants if r[0] < hi and lo < r[1]]:
            self._drop_remnant(r, store=True)

    def _drop_remnant(self, r: list, store: bool) -> None:
        self.remnants.remove(r)
        self.remnant_bytes -= r[3].nbytes
        if store:
            self._store(r[0], r[2], r[3], r[4])
        else:
            self.pending -= 1

    def shadow_drop(self, lo: int, hi: int) -> None:
        """Bytes [lo, hi) are being rewritten: the arrays of what they held no longer describe them. A pending
        tensor written over only in part becomes a remnant (its other bytes are made if something reads them)."""
        if self.shadow:
            for a in self._shadowed(lo, hi):
                end, _, logical, desc, pending = self.shadow.pop(a)
                del self.starts[bisect_left(self.starts, a)]
                if not pending:
                    continue
                if lo <= a and end <= hi:
                    self.pending -= 1
                else:
                    self.remnants.append([a, end, desc, logical, []])
                    self.remnant_bytes += logical.nbytes
        for r in [r for r in self.remnants if r[0] < hi and lo < r[1]]:
            r[4].append((lo, hi))
            if _covers(r[4], r[0], r[1]):
                self._drop_remnant(r, store=False)
        while self.remnant_bytes > REMNANT_BYTES:
            self._drop_remnant(self.remnants[0], store=True)

    def shadow_put(self, address: int, desc: TensorDesc, logical: np.ndarray, pending: bool = False,
                   key: tuple | None = None) -> None:
        """`logical` is what the device-format tensor at `address` holds, in the framework's layout; `pending`:
        its bytes are not written (materialize writes them when they are needed)."""
        self.shadow_drop(address, address + desc.nbytes)
        self.shadow[address] = [address + desc.nbytes, key or shadow_key(desc), logical, desc, pending]
        insort(self.starts, address)
        self.pending += pending

    def shadow_get(self, address: int, desc: TensorDesc, key: tuple | None = None) -> np.ndarray | None:
        """The array of the tensor at `address` if it is the one `desc` describes (`key`: shadow_key(desc))."""
        hit = self.shadow.get(address)
        return hit[2] if hit is not None and hit[1] == (key or shadow_key(desc)) else None

    def _shadowed(self, lo: int, hi: int) -> list[int]:
        """The shadow's addresses whose tensors overlap [lo, hi): a bisection, the entries being disjoint."""
        starts, out = self.starts, []
        k = bisect_left(starts, hi)
        while k:
            k -= 1
            if self.shadow[starts[k]][0] <= lo:
                break
            out.append(starts[k])
        return out

    def out_view(self, address: int, desc: TensorDesc) -> np.ndarray:
        """A writable view of the bytes an output lands in (bounds checked now, once per planned kernel)."""
        buf, off = self._locate(address, desc.nbytes)
        return buf[off:off + desc.nbytes].view(desc.dtype).reshape(desc.shape)

    def is_weight(self, address: int) -> bool:
        return self.weight_base <= address < self.weight_end

    def widened_weight(self, address: int, desc: TensorDesc) -> np.ndarray:
        """An fp16 weight as exact fp32: the cached copy, or (past the budget) one converted for this use only."""
        arr = self.cached_weight(address, desc, True)
        return arr if arr is not None else widen(self.view(address, desc))

    def cached_weight(self, address: int, desc: TensorDesc, wide: bool, make=None) -> np.ndarray | None:
        """(`make`: how the kernel's array is made from the view, e.g. a FRACTAL_Z filter converted back to its
        framework layout, whose size is the logical desc's.)"""
        """A weight as a kernel takes it, made once per loaded model while the budget lasts (None past it):
        wide, an fp16 weight as exact fp32 (cube kernels widen their inputs to fp32 anyway, and numpy converts
        fp16 at ~4 ns per element: a ResNet-50's filters every execution); else an aligned copy of a weight the
        mapped file leaves misaligned for its dtype (aligned(): numpy computes some results from misaligned
        arrays by another path, with other roundings). The budget bounds the copies (an LLM's fp16 weights
        widened would double the model in memory); a weight past it is made by each launch that reads it
        (KernelPlan.later)."""
        key = (address, desc.shape, desc.dtype, wide)
        arr = self.widened.get(key)
        if arr is None:
            kept = desc.logical
            if not self.budget.take(4 * kept.numel if wide else kept.nbytes):
                return None
            arr = (make or (widen if wide else aligned))(self.view(address, desc))
            self.widened[key] = arr
        return arr

    def _locate(self, address: int, nbytes: int) -> tuple[np.ndarray, int]:
        for name, base, buf in self.regions:
            if base <= address < base + len(buf) or (nbytes == 0 and base <= address <= base + len(buf)):
                off = address - base
                if off + nbytes > len(buf):
                    raise MemoryFault(f"{nbytes} bytes at 0x{address:X} run past the end of the {name} "
                                      f"({len(buf)} B)")
                return buf, off
        raise MemoryFault(f"address 0x{address:X} is outside device memory")

    def read(self, address: int, desc: TensorDesc) -> np.ndarray:
        """A copy: what the host gets back (D2H)."""
        self.materialize(address, address + desc.nbytes)
        return self.view(address, desc).copy()

    def view(self, address: int, desc: TensorDesc) -> np.ndarray:
        """A read-only view: what a kernel reads when it starts. Kernels compute at once and their outputs are
        copied in at the end (see holds), so the view is never read after memory changes under it."""
        buf, off = self._locate(address, desc.nbytes)
        v = buf[off:off + desc.nbytes].view(desc.dtype).reshape(desc.shape)
        v.flags.writeable = False
        return v

    def holds(self, array: np.ndarray) -> bool:
        """Whether an array may be (a view of) device memory: a kernel that returns its input as its output."""
        if array.base is None:   # owns its memory (a kernel's fresh result): no region's view
            return False
        return any(np.may_share_memory(array, buf) for _, _, buf in self.regions)

    def write(self, address: int, array: np.ndarray) -> None:
        raw = np.asarray(array, order="C").reshape(-1).view(np.uint8)
        buf, off = self._locate(address, raw.size)
        self.shadow_drop(address, address + raw.size)
        buf[off:off + raw.size] = raw
