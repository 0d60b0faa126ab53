"""Which .om tensor holds each framework tensor.

An .om op covers the framework nodes its original names name (GE's `_datadump_original_op_names`, kept by every
fusion and fold; an adapter's helper IR nodes are named `<node>_<suffix>`). Its outputs hold the tensors that
leave that group — produced inside, read outside or a model output — matched in order and by element count; of
several ops holding one tensor (an adapter's expansion: a helper, then the op computing the node's result) the
last to run holds it. A tensor read only inside the group is `fused`, unless the op's kernel can give it back
(stages.py). A removed view (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) holds its input's bytes;
a tensor no op computes was folded at compile time, or is not in the .om: `not_comparable`."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from atc_py.common.errors import AtcError
from atc_py.ops.core.base import OpError

from .golden import SOURCE_OPS, FrameworkNode, Golden
from .metrics import Metrics, compare
from .om_side import OmOp
from .stages import AscTrace, asc_origins, asc_output_sources, stages

VIEW_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "ExpandDims", "StopGradient",
            "Snapshot"}
# ops the compiler inserted keep the name of the node they serve and hold no framework tensor of their own: a
# layout change (an NHWC model's convolutions computed in NCHW; transpose sinking moves it past the ops after that
# node) and a precision cast (the node's fp16 result back to fp32): (their types, framework types that are them)
INSERTED = (({"TransposeD", "Transpose", "TransData"}, {"Transpose", "TransposeD"}), ({"Cast"}, {"Cast"}))
INPUT = OmOp(-1, "(input)", "Data", [])
COMPILED = OmOp(-1, "(compile time)", "Const", [])   # the holder of a folded tensor: no op computes it
STATUSES = ("ok", "divergent", "first_divergent", "fused", "not_comparable")


@dataclass
class Holder:
    """Where an .om value of a framework tensor comes from."""
    op: OmOp
    out_index: int                        # the op's output (-1: a stage)
    load: Callable[[], np.ndarray]
    how: str = ""                         # a stage's label, or "view of <tensor>"
    stage: int = -1
    value: Callable | None = None         # a stage: its output on other inputs, value(inputs)
    fmt: str = "ND"                       # the .om tensor's format (NCHW where a TF model's NHWC was transposed)
    perm: tuple | None = None             # framework tensor = the .om tensor transposed by perm (transpose sinking)
    label: str = ""                       # the CSV's TensorIndex (default: <op>:output:<k>)


@dataclass
class Row:
    node: FrameworkNode
    tensor: str
    out_index: int
    status: str
    golden_shape: tuple = ()
    golden_dtype: str = ""
    holder: Holder | None = None
    fused_into: OmOp | None = None
    metrics: Metrics | None = None
    om_dtype: str = ""
    detail: str = ""
    locate: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def matched(self) -> bool:
        return self.status in ("ok", "divergent", "first_divergent")


class NameMap:
    """Framework node by the IR name an .om op's original names carry."""

    def __init__(self, golden: Golden):
        self.by_ir = {}
        for n in golden.nodes:
            self.by_ir.setdefault(golden.ir_name(n), n)

    def node(self, ir_name: str) -> FrameworkNode | None:
        hit = self.by_ir.get(ir_name)
        cut = len(ir_name)
        while hit is None and cut > 0:
            cut = ir_name.rfind("_", 0, cut)
            if cut <= 0:
                return None
            hit = self.by_ir.get(ir_name[:cut])
        return hit


def _entry_shape(e: dict) -> tuple:
    """A dump's shape in the framework's layout (a device format's origin shape)."""
    return tuple(e.get("origin_shape") or e["shape"])


def _format(e: dict) -> str:
    """The layout a loaded dump is in (load_entry converts a device format back to its origin format)."""
    return e.get("origin_format") or e.get("format", "ND")


def _out_format(op: OmOp) -> str:
    e = op.outputs.get(0)
    return _format(e) if e else "ND"


CHANNELS_LAST = {4: (0, 2, 3, 1), 5: (0, 2, 3, 4, 1)}    # NCHW -> NHWC, NCDHW -> NDHWC
CHANNELS_FIRST = {4: (0, 3, 1, 2), 5: (0, 4, 1, 2, 3)}


def framework_layout(arr: np.ndarray, h: Holder, shape: tuple, layout: str) -> np.ndarray:
    """An .om tensor in the framework's layout: the permutation a sunk transpose left (recorded on the op), or a
    channels-last (TF) model's tensor atc-py computes in NCHW (its format says so) moved back to channels-last."""
    if h.perm is not None and len(h.perm) == arr.ndim:
        return arr.transpose(h.perm)
    perm = CHANNELS_LAST.get(arr.ndim)
    if layout in ("NHWC", "NDHWC") and h.fmt in ("NCHW", "NCDHW") and perm is not None:
        moved = arr.transpose(perm)
        if moved.shape == shape or arr.shape != shape:   # the same shape, or a view's input (reshaped after)
            return moved
    return arr


def om_layout(golden: np.ndarray, shape: tuple) -> np.ndarray:
    """A framework tensor as the .om op's input of `shape` holds it: as it is, or channels-last to first."""
    if tuple(golden.shape) == tuple(shape) or golden.size != math.prod(shape):
        return golden.reshape(shape)
    perm = CHANNELS_FIRST.get(golden.ndim)
    if perm is not None and tuple(golden.transpose(perm).shape) == tuple(shape):
        return golden.transpose(perm)
    return golden.reshape(shape)


def _unbroadcast(mine: np.ndarray, shape: tuple) -> np.ndarray:
    """A fused kernel computes a per-channel value (an SE gate) for every row it iterates: the framework's tensor
    is one row of it, when every row holds the same values."""
    if mine.ndim != len(shape) or mine.size == math.prod(shape) or \
            any(d != 1 and d != m for d, m in zip(shape, mine.shape)):
        return mine
    one = mine[tuple(slice(0, 1) if d == 1 else slice(None) for d in shape)]
    return one if np.array_equal(np.broadcast_to(one, mine.shape), mine, equal_nan=True) else mine


def _numel(shape) -> int:
    return int(math.prod(shape))


class Matcher:
    def __init__(self, golden: Golden, ops: list[OmOp], kernels, load, cos_threshold: float,
                 compile_time: Callable[[set], dict] | None = None):
        """`compile_time(tensors)`: the compile-time values of those framework tensors (compile_time.py)."""
        self.golden, self.ops, self.kernels, self.load = golden, ops, kernels, load
        self.compile_time = compile_time
        self.threshold = cos_threshold
        self.names = NameMap(golden)
        self.pos = {n.name: k for k, n in enumerate(golden.nodes)}
        self.consumers: dict[str, list[FrameworkNode]] = {}
        for n in golden.nodes:
            for t in n.inputs:
                if t:
                    self.consumers.setdefault(t, []).append(n)
        self.cover: dict[str, OmOp] = {}          # framework node -> the last op covering it
        self.holders: dict[str, Holder] = {}

    def group(self, op: OmOp) -> list[FrameworkNode]:
        nodes = {}
        for ir in op.original:
            n = self.names.node(ir)
            if n is not None:
                nodes[n.name] = n
        return sorted(nodes.values(), key=lambda n: self.pos[n.name])

    def unread(self, t: str) -> bool:
        """A tensor nothing reads and the model does not output (Dropout's mask, an unused second output): the
        compiler drops it, so no .om tensor holds it."""
        return t not in self.consumers and t not in self.golden.outputs

    def _leaving(self, group: list[FrameworkNode]) -> tuple[list[str], list[str]]:
        """(tensors leaving the group, tensors read only inside it), each in topological order; unread ones are
        in neither."""
        inside = {n.name for n in group}
        outs = set(self.golden.outputs)
        leave, internal = [], []
        for n in group:
            for t in n.outputs:
                if not t or t not in self.golden.tensors or self.unread(t):
                    continue
                if t in outs or any(c.name not in inside for c in self.consumers.get(t, [])):
                    leave.append(t)
                else:
                    internal.append(t)
        return leave, internal

    def assign(self) -> None:
        for op in self.ops:
            group = self.group(op)
            if not group or any(op.op_type in ops and not any(n.op_type in own for n in group)
                                for ops, own in INSERTED):
                continue
            for n in group:
                self.cover[n.name] = op
            leave, internal = self._leaving(group)
            inner = asc_origins(self.kernels, op)
            taken, used = self._asc_outputs(op, inner, set(leave) | set(internal))
            outs = sorted((k, e) for k, e in op.outputs.items() if k not in used)
            leave = [t for t in leave if t not in taken]
            in_order = len(outs) == len(leave) and all(
                _numel(_entry_shape(e)) == _numel(self.golden.tensors[t].shape) for (_, e), t in zip(outs, leave))
            for j, (k, e) in enumerate(outs):
                if in_order:
                    t = leave[j]
                else:
                    t = next((t for t in reversed(leave) if t not in taken and
                              _numel(self.golden.tensors[t].shape) == _numel(_entry_shape(e))), None)
                if t is None:
                    continue
                taken.add(t)
                self.holders[t] = Holder(op, k, lambda e=e: self.load(e), fmt=_format(e),
                                         perm=self.kernels.origin_perm(op.name))
            unheld = (set(internal) | set(leave)) - taken
            perms = {e[2]: e[3] for e in inner}
            for key, t in self._inner_keys(inner):    # a fused op's outputs: the member's own permutation
                if t in taken and self.holders[t].op is op and perms[key] is not None:
                    self.holders[t].perm = perms[key]
            if inner and unheld:
                self._asc_holders(op, inner, unheld)
            elif internal and len(op.outputs) == 1:
                parts = stages(op, self.kernels, self.load, [n.op_type for n in group])
                for s, ((label, value), t) in enumerate(zip(reversed(parts), reversed(internal))):
                    j = len(parts) - 1 - s
                    self.holders[t] = Holder(op, -1, value, f"inside {op.name}: its kernel {label}", j, value,
                                             _out_format(op), label=f"{op.name}:stage:{j}")

    def _asc_outputs(self, op: OmOp, inner, group_tensors: set[str]) -> tuple[set[str], set[int]]:
        """A fused op's outputs by the AscIR node each one's Store writes: (the tensors they hold, the outputs
        so matched)."""
        sources = asc_output_sources(self.kernels, op) if inner else {}
        by_key = {key: t for key, t in self._inner_keys(inner) if t in group_tensors}
        taken, used = set(), set()
        for k, e in op.outputs.items():
            t = by_key.get(sources.get(k, ""))
            if t is not None and t not in taken and _numel(_entry_shape(e)) == _numel(self.golden.tensors[t].shape):
                self.holders[t] = Holder(op, k, lambda e=e: self.load(e), fmt=_format(e))
                taken.add(t)
                used.add(k)
        return taken, used

    def _asc_holders(self, op: OmOp, inner, internal: set[str]) -> None:
        """A fused AscBackend's inner values, by the AscIR node that computes each member's result."""
        trace = AscTrace(op, self.kernels, self.load, list(dict.fromkeys(e[2].rsplit("/", 1)[0] for e in inner)))
        perms = {e[2]: e[3] for e in inner}
        for key, t in self._inner_keys(inner):
            perm = perms[key]
            if t in internal:
                self.holders[t] = Holder(op, -1, lambda key=key: trace.value(key),
                                         f"inside {op.name}: its AscIR node {key.rsplit('/', 1)[-1]}", 0,
                                         lambda inputs, key=key: trace.value(key, inputs), _out_format(op), perm,
                                         f"{op.name}:ascir:{key.rsplit('/', 1)[-1]}")

    def _inner_keys(self, inner) -> list[tuple[str, str]]:
        """(AscIR key, framework tensor) of a fused op's members; a helper node's value (named <node>_<suffix>:
        an inserted Cast) counts only for a tensor no member of the node's own name computes."""
        entries = []
        for ir_name, k, key, _ in inner:
            n = self.names.node(ir_name)
            if n is not None and k < len(n.outputs) and n.outputs[k]:
                entries.append((key, n.outputs[k], ir_name == self.golden.ir_name(n)))
        exact = {t for _, t, own in entries if own}
        return [(key, t) for key, t, own in entries if own or t not in exact]

    def _view_holder(self, n: FrameworkNode) -> Holder | None:
        src = next((t for t in n.inputs if t), None)
        h = self.holders.get(src) if src else None
        if h is None and src in self.golden.inputs:      # a view of a model input: the .om's input itself
            h = Holder(INPUT, -1, lambda: self.golden.tensors[src], "the model's input", label="(input)")
        if h is None or n.op_type not in VIEW_OPS or n.name in self.cover:
            return None
        return Holder(h.op, h.out_index, h.load, f"view of {src} ({h.how or h.op.name})", h.stage, h.value, h.fmt,
                      h.perm, h.label)

    def _static(self) -> set[str]:
        """Tensors the compiler can know without the inputs' values: constants and what depends only on them
        and on shapes (Shape of a static-shape tensor)."""
        static = set(self.golden.constants)
        for n in self.golden.nodes:
            if n.op_type in ("Shape", "Size") or all(t in static for t in n.inputs if t):
                static.update(t for t in n.outputs if t)
        return static

    def _compiled(self, static: set[str]) -> None:
        """Holders of the folded tensors: their compile-time values."""
        wanted = {t for n in self.golden.nodes if n.name not in self.cover and n.op_type not in SOURCE_OPS
                  for t in n.outputs if t in static and t not in self.holders}
        values = self.compile_time(wanted) if self.compile_time is not None and wanted else {}
        for t, v in values.items():
            self.holders[t] = Holder(COMPILED, -1, lambda v=v: v, "folded into a constant at compile time: "
                                                                  "atc-py's compile-time value", label="(compile time)")

    def rows(self) -> list[Row]:
        self.assign()
        static = self._static()
        self._compiled(static)
        result: list[Row] = []
        for n in self.golden.nodes:
            if n.op_type in SOURCE_OPS:
                continue
            for k, t in enumerate(n.outputs):
                g = self.golden.tensors.get(t) if t else None
                if g is None:
                    continue
                row = Row(n, t, k, "not_comparable", tuple(g.shape), str(g.dtype))
                h = self.holders.get(t)
                if h is None and k == 0:      # a view's data output; its other outputs (a mask) are not the data
                    h = self._view_holder(n)
                    if h is not None:
                        self.holders[t] = h
                if h is not None:
                    self._measure(row, h, g)
                elif self.unread(t):
                    row.detail = f"output {k} of {n.op_type}, which nothing reads: the compiler drops it, no .om " \
                                 "tensor holds it"
                elif n.name in self.cover:
                    row.status, row.fused_into = "fused", self.cover[n.name]
                    row.detail = f"computed inside {self.cover[n.name].name} ({self.cover[n.name].op_type}); " \
                                 "no kernel result of its own"
                elif t in static:
                    row.detail = "folded into a constant at compile time"
                else:
                    row.detail = "no op of the .om computes it"
                result.append(row)
        first = next((r for r in result if r.status == "divergent"), None)
        if first is not None:
            first.status = "first_divergent"
        return result

    def _measure(self, row: Row, h: Holder, g: np.ndarray) -> None:
        row.holder = h
        row.detail = h.how
        if g.dtype.kind not in "biuf" or g.size == 0:
            row.detail = f"{g.dtype} tensor: nothing to measure" if g.size else "empty tensor"
            row.status = "not_comparable"
            return
        try:
            mine = np.asarray(h.load())
        except KeyError as exc:
            row.status, row.detail = "not_comparable", f"the kernel's trace holds no value {exc}"
            return
        except (OpError, AtcError, ValueError) as exc:     # a rerun of the op's kernel that cannot be made
            row.status, row.detail = "not_comparable", f"its value inside {h.op.name} could not be recomputed: " \
                                                       f"{str(exc)[:160]}"
            return
        row.om_dtype = str(mine.dtype)
        mine = framework_layout(mine, h, tuple(g.shape), self.golden.layout)
        mine = _unbroadcast(mine, g.shape)
        if mine.size != g.size:
            row.status = "not_comparable"
            row.detail = f"the .om tensor has shape {list(mine.shape)}, the framework's {list(g.shape)}"
            return
        if mine.dtype.kind not in "biuf":
            row.status, row.detail = "not_comparable", f"the .om tensor is {mine.dtype}"
            return
        row.metrics = compare(mine, g)
        row.status = "divergent" if self.divergent(row.metrics) else "ok"

    def divergent(self, m: Metrics) -> bool:
        return m.nonfinite or math.isnan(m.cosine) or m.cosine < self.threshold
