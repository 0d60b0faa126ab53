"""Format selection and TransData insertion (what CANN's FE does with the op information library's formats).

An op's registration says which device format each of its inputs and outputs takes on an SoC (OpSpec.formats,
OpSpec.soc_formats: the op information library). Three families of regions are formed, one after the other:

* 5HD: convolutions and pooling run on NC1HWC0 activations, a convolution's filter is FRACTAL_Z (int8: C0 = 32);
* 6HD: 3-D convolutions and pooling on NDC1HWC0, their filters FRACTAL_Z_3D;
* NZ: on the SoCs whose matmul kernels take FRACTAL_NZ (Ascend310, 310P, 310B, 910; the 910B's kernels read ND
  and fractalise on the way into L1, so ND stays), MatMul / BatchMatMul operands and results are FRACTAL_NZ.

Each anchor op gets its formats; the format-agnostic elementwise ops between anchors (a lone activation, a
residual Add, a bias Add, an autofused chain without reductions) carry the format on; a TransData sits wherever
a device-format tensor meets an op that wants the framework's layout. The model's inputs and outputs keep NCHW
(NHWC for TensorFlow, ND for matrices): a ResNet reads its input through one TransData and leaves through another.
Constant operands (filters, matmul weights) are converted here, at compile time, and stored in their device
format (zero-padded fractals) in the weights. Sizes follow: a 3-channel 5HD tensor occupies 16 channels.

Static graphs only (a shape decided at run time keeps ND)."""
from __future__ import annotations

from dataclasses import dataclass

from ..autofuse.schedule import reduce_axes
from ..ir.formats import (
    C04,
    FRACTAL_NZ,
    FRACTAL_Z,
    FRACTAL_Z_3D,
    FRACTAL_Z_C04,
    NC1HWC0,
    NC1HWC0_C04,
    NDC1HWC0,
    SMALL_CHANNEL,
    c0_for,
    device_shape,
    to_device,
)
from ..ir.graph import Graph, Node, TensorDesc, Value
from ..ops import get_op
from ..ops.elementwise import BinaryOp, UnaryOp
from ..platform.soc import SocSpec

FLOATS = ("float16", "float32")
INT8 = ("int8", "uint8")
REDUCTIONS = {"Sum", "Mean", "Max", "Min", "Prod"}          # AscIR reductions: a group with one is not elementwise
TO_NCHW, TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


@dataclass(frozen=True)
class Family:
    """One kind of device-format region: the activation format, the constant operand's (weight) format, the rank
    of the tensors it holds, their dtypes and the framework formats they come from."""
    act: str
    weight: str
    ranks: tuple[int, ...]
    dtypes: tuple[str, ...]
    framework: tuple[str, ...]
    data_format: str            # the anchor's data_format attr it takes ("" = none)
    same_shape: bool            # elementwise operands must have the output's shape (NZ), else its N and C (5HD)


FIVE_HD = Family(NC1HWC0, FRACTAL_Z, (4,), FLOATS + INT8 + ("int32",), ("NCHW", "ND", "NHWC"), "NCHW", False)
SIX_HD = Family(NDC1HWC0, FRACTAL_Z_3D, (5,), FLOATS, ("NCDHW", "ND"), "NCDHW", False)
NZ = Family(FRACTAL_NZ, FRACTAL_NZ, (2, 3, 4, 5, 6), FLOATS, ("ND", "NCHW", "NHWC", "NCDHW"), "", True)
FAMILIES = (FIVE_HD, SIX_HD, NZ)


def op_formats(op_type: str, soc: SocSpec | None) -> dict[str, str]:
    """The formats an op's AI Core kernel takes on this SoC: its per-SoC entry (by Short_SoC_version), else the
    default (OpSpec.formats)."""
    spec = get_op(op_type)
    if spec is None:
        return {}
    per_soc = getattr(spec, "soc_formats", {}) or {}
    if soc is not None and soc.short_soc_version in per_soc:
        return per_soc[soc.short_soc_version]
    return getattr(spec, "formats", {}) or {}


class _Pass:
    """One family's selection on one graph."""

    def __init__(self, graph: Graph, fam: Family, soc: SocSpec | None, small_channel: bool):
        self.graph, self.fam, self.soc, self.small_channel = graph, fam, soc, small_channel

    def anchor_slots(self, op_type: str) -> tuple[int, ...] | None:
        """The inputs an anchor takes in the family's activation format (None: not an anchor)."""
        fmts = op_formats(op_type, self.soc)
        if fmts.get("y") != self.fam.act:
            return None
        spec = get_op(op_type)
        return tuple(k for k, name in enumerate(spec.inputs) if fmts.get(name.rstrip("?")) == self.fam.act)

    def wants_any(self, node: Node | None) -> bool:
        """An anchor of this family (whatever its operands): a matmul next to a head split."""
        return node is not None and node.op_type not in ("ConfusionTransposeD", "Data") and \
            self.anchor_slots(node.op_type) is not None

    def weight_slots(self, op_type: str) -> tuple[int, ...]:
        fmts, spec = op_formats(op_type, self.soc), get_op(op_type)
        if self.fam.weight == self.fam.act:
            return ()
        return tuple(k for k, name in enumerate(spec.inputs) if fmts.get(name.rstrip("?")) == self.fam.weight)

    def activation(self, v: Value | None) -> bool:
        """A tensor of known shape the family's format can hold."""
        d = v.desc if v is not None else None
        return d is not None and len(d.shape) in self.fam.ranks and d.known and d.dtype in self.fam.dtypes and \
            d.format in self.fam.framework and min(d.shape, default=1) > 0

    def wants(self, node: Node) -> bool:
        """An anchor on tensors the family holds, its weights constant (converted here)."""
        slots = self.anchor_slots(node.op_type)
        if slots is None or not node.inputs or not self.activation(node.outputs[0]):
            return False
        if self.fam.data_format and node.attrs.get("data_format", self.fam.data_format) != self.fam.data_format:
            return False
        if not slots or slots[0] >= len(node.inputs) or node.inputs[slots[0]] is None or \
                any(k < len(node.inputs) and node.inputs[k] is not None and not self.activation(node.inputs[k])
                    for k in slots):
            return False
        for k in self.weight_slots(node.op_type):
            w = node.inputs[k] if k < len(node.inputs) else None
            if w is None or not w.is_const or len(w.desc.shape) != self.fam.ranks[0] or \
                    w.desc.dtype not in self.fam.dtypes:
                return False
        return True

    def propagates(self, node: Node, region: set[int]) -> bool:
        """An elementwise op over region tensors: it runs on the device format as it is; its constants stay. NZ
        also holds a softmax or a normalisation over the last axis (SoftmaxV2 and LayerNorm take FRACTAL_NZ)."""
        if node.op_type == "ConcatD" and not self.fam.same_shape:
            return self.concat(node, region)
        if len(node.outputs) != 1 or not (_elementwise(node) or self.fam.same_shape and _last_axis_reduction(node)):
            return False
        out = node.outputs[0]
        ins = [v for v in node.inputs if v is not None and not v.is_const]
        if not any(id(v) in region for v in ins):   # the others enter through a TransData (a residual stream)
            return False
        if not self.activation(out):
            return False
        if self.fam.same_shape:
            consts = [v for v in node.inputs if v is not None and v.is_const]
            return all(_batch_broadcast(v, out) for v in ins) and all(_row_broadcast(c, out) for c in consts)
        n, c = out.desc.shape[:2]
        return all(v.desc.shape[:2] == (n, c) for v in ins)

    def concat(self, node: Node, region: set[int]) -> bool:
        """A concatenation over region feature maps: along N, H or W as it is; along C when every input's channels
        fill whole C0 blocks (an Inception / DenseNet / Fire module's concat), as TBE's ConcatD on 5HD does."""
        ins = [v for v in node.inputs if v is not None]
        out = node.outputs[0]
        if not ins or any(v.is_const for v in ins) or not any(id(v) in region for v in ins) or \
                not self.activation(out) or not all(self.activation(v) for v in ins):
            return False
        axis = int(node.attrs.get("concat_dim", 1)) % len(out.desc.shape)
        c0 = c0_for(out.desc.dtype)
        return axis != 1 or all(v.desc.shape[1] % c0 == 0 for v in ins)

    def slots(self, node: Node) -> tuple[int, ...]:
        slots = self.anchor_slots(node.op_type)
        if slots is not None:
            return slots
        return tuple(k for k, v in enumerate(node.inputs) if v is not None and not v.is_const)

    def run(self) -> int:
        graph, fam = self.graph, self.fam
        if not any(self.wants(n) for n in graph.nodes):
            return 0
        if fam.act == FRACTAL_NZ:
            confusion_transposes(graph, self)
        graph.topo_sort()
        region: set[int] = set()             # id(Value) of the tensors in the device format
        chosen: list[Node] = []
        for node in graph.nodes:
            if node.op_type != "Data" and (self.wants(node) or self.propagates(node, region)):
                chosen.append(node)
                region.add(id(node.outputs[0]))
        if not any(self.anchor_slots(n.op_type) is not None for n in chosen):
            return 0
        members = {id(n) for n in chosen}
        logical = {id(n.outputs[0]): n.outputs[0].desc for n in chosen}
        inserted = 0
        into: dict[tuple, Value] = {}
        weights: dict[tuple, Value] = {}
        for node in chosen:
            c04 = False
            for k in self.slots(node):
                v = node.inputs[k] if k < len(node.inputs) else None
                if v is None or id(v) in region:
                    continue
                if v.is_const:                   # a constant operand (a matmul weight): converted now
                    key = (id(v), fam.act)
                    if key not in weights:
                        weights[key] = _converted(graph, v, fam.act)
                    _replace_input(graph, node, k, weights[key])
                    continue
                fmt = NC1HWC0_C04 if fam.act == NC1HWC0 and self.small(node, k, v) else fam.act
                c04 |= fmt == NC1HWC0_C04
                if (id(v), fmt) not in into:
                    into[(id(v), fmt)] = _trans_data(graph, v, v.desc, _device_desc(v.desc, fmt), node)
                    inserted += 1
                graph.set_input(node, k, into[(id(v), fmt)])
            if self.anchor_slots(node.op_type) is None:
                continue
            if c04:
                node.attrs[SMALL_CHANNEL] = True        # the cube packs taps and 4 channels along K (ops/conv_pool)
            for k in self.weight_slots(node.op_type):
                w = node.inputs[k]
                fmt = FRACTAL_Z_C04 if c04 else fam.weight
                if (id(w), fmt) not in weights:  # a filter shared by several convolutions is converted once
                    weights[(id(w), fmt)] = _converted(graph, w, fmt)
                _replace_input(graph, node, k, weights[(id(w), fmt)])
        for node in chosen:
            v = node.outputs[0]
            v.desc = _device_desc(logical[id(v)], fam.act)
        for node in chosen:              # consumers outside the region read the framework's layout back
            v = node.outputs[0]
            outside = [(c, k) for c, k in list(v.consumers) if not (id(c) in members and k in self.slots(c))]
            if outside:
                back = _trans_data(graph, v, v.desc, logical[id(v)], outside[0][0])
                inserted += 1
                for c, k in outside:
                    graph.set_input(c, k, back)
        if fam.act == NC1HWC0:
            _from_nhwc(graph)
        graph.topo_sort()
        return inserted

    def small(self, node: Node, k: int, v: Value) -> bool:
        """--enable_small_channel: a convolution reading a feature map of <= 4 channels from outside 5HD (the
        image) takes it as NC1HWC0_C04 and its filter as FRACTAL_Z_C04 (4 channels padded, not 16)."""
        return self.small_channel and node.op_type == "Conv2D" and k == 0 and v.desc.shape[1] <= C04 and \
            int(node.attrs.get("groups", 1) or 1) == 1 and v.desc.dtype in FLOATS


def select_formats(graph: Graph, small_channel: bool = False, soc: SocSpec | None = None) -> int:
    """Give each family's anchors their device formats and the elementwise ops between them too; returns the
    TransData nodes inserted."""
    if any(n.subgraphs for n in graph.nodes):
        return 0
    return sum(_Pass(graph, fam, soc, small_channel).run() for fam in FAMILIES)


def confusion_transposes(graph: Graph, nz: _Pass) -> int:
    """Reshape -> TransposeD (and TransposeD -> Reshape) next to a matmul that takes FRACTAL_NZ become one
    ConfusionTransposeD, which reads and writes FRACTAL_NZ, where both of its ends are matrices of 16-aligned
    rows and columns (an attention block's head split and merge); returns how many."""
    if op_formats("ConfusionTransposeD", nz.soc).get("y") != FRACTAL_NZ:
        return 0
    formed, removed = 0, set()
    for first in list(graph.nodes):
        if first.op_type not in ("Reshape", "TransposeD") or id(first) in removed:
            continue
        users = first.outputs[0].consumers
        second = users[0][0] if len(users) == 1 else None
        if second is None or {first.op_type, second.op_type} != {"Reshape", "TransposeD"}:
            continue
        x, y = first.inputs[0], second.outputs[0]
        if not (_aligned(x) and _aligned(y) and x.desc.dtype in FLOATS) or \
                not (nz.wants_any(x.producer) or any(nz.wants_any(c) for c, _ in y.consumers)):
            continue
        trans = first if first.op_type == "TransposeD" else second
        reshape = second if trans is first else first
        rank = len(trans.inputs[0].desc.shape)
        attrs = {"perm": [int(p) % rank for p in trans.attrs.get("perm") or range(rank)[::-1]],
                 "shape": list(reshape.outputs[0].desc.shape), "transpose_first": trans is first}
        node = graph.add_node(graph.unique_name(f"{trans.name}_confusion"), "ConfusionTransposeD", [x],
                              [TensorDesc(y.desc.shape, y.desc.dtype, "ND", "ND")], attrs=attrs)
        node.meta.update({k: trans.meta[k] for k in ("stream_id", "engine", "core_type") if k in trans.meta})
        graph.replace_all_uses(y, node.outputs[0])
        removed |= {id(second), id(first)}
        for dead in (second, first):
            consts = [v for v in dead.inputs[1:] if v is not None and v.is_const]
            graph.remove_node(dead)
            for c in consts:
                if not c.consumers:
                    graph.remove_node(c.producer)
        formed += 1
    return formed


def _aligned(v: Value) -> bool:
    d = v.desc
    return len(d.shape) >= 2 and d.known and d.shape[-1] % 16 == 0 and d.shape[-2] % 16 == 0


def _elementwise(node: Node) -> bool:
    """A vector op CANN runs on a device format as it is: elementwise math, an autofused group of it without
    reductions, a constant pad of H and W only."""
    if isinstance(get_op(node.op_type), (UnaryOp, BinaryOp)):
        return True
    if node.op_type == "PadV3D":
        pads = [int(v) for v in node.attrs.get("paddings") or []]
        return len(pads) == 8 and not any(pads[:4]) and node.attrs.get("mode", "constant") == "constant"
    hint = node.attrs.get("ascgraph") if node.op_type == "AscBackend" else None
    return hint is not None and not any(n.type in REDUCTIONS for n in hint.nodes)


def _last_axis_reduction(node: Node) -> bool:
    """A softmax, or an autofused group whose reductions all run over its output's last axis (a LayerNorm, a
    Softmax): the reduction stays inside each row of 16 x 16 fractals."""
    if node.op_type == "SoftmaxV2":
        rank = len(node.outputs[0].desc.shape)
        return [int(a) % max(rank, 1) for a in node.attrs.get("axes", [-1])] == [rank - 1]
    hint = node.attrs.get("ascgraph") if node.op_type == "AscBackend" else None
    if hint is None or not hint.output_nodes:
        return False
    last = {n.y.axis[-1] if n.y.axis else None for n in hint.output_nodes}
    return len(last) == 1 and set(reduce_axes(hint)) <= last


def _batch_broadcast(v: Value, out: Value) -> bool:
    """An NZ operand of the output's matrix shape, broadcast (if at all) over leading dims only (a mask)."""
    a, o = tuple(v.desc.shape), tuple(out.desc.shape)
    return len(a) == len(o) and a[-2:] == o[-2:] and all(x in (1, y) for x, y in zip(a[:-2], o[:-2]))


def _row_broadcast(c: Value, out: Value) -> bool:
    """A constant operand an NZ kernel broadcasts: a scalar or a row (a bias) along the last axis."""
    shape = tuple(c.desc.shape)
    return all(d == 1 for d in shape[:-1]) and (not shape or shape[-1] in (1, out.desc.shape[-1]))


def _device_desc(d: TensorDesc, fmt: str) -> TensorDesc:
    return TensorDesc(device_shape(d.shape, fmt, d.origin_format, d.dtype), d.dtype, fmt, d.origin_format,
                      tuple(d.shape))


def _replace_input(graph: Graph, node: Node, k: int, new: Value) -> None:
    old = node.inputs[k]
    graph.set_input(node, k, new)
    if not old.consumers:
        graph.remove_node(old.producer)


def _perm(node: Node | None) -> list[int] | None:
    if node is None or node.op_type != "TransposeD" or len(node.outputs[0].consumers) != 1:
        return None
    return [int(p) for p in node.attrs.get("perm", [])]


def _from_nhwc(graph: Graph) -> None:
    """A channels-last model's convolutions: NHWC -> TransposeD -> TransData becomes one TransData from NHWC (and
    back: TransData -> TransposeD to NHWC becomes one TransData to NHWC), as CANN converts NHWC into 5HD."""
    for t in [n for n in graph.nodes if n.op_type == "TransData"]:
        src = t.inputs[0].producer
        if t.attrs["dst_format"] in (NC1HWC0, NC1HWC0_C04) and _perm(src) == TO_NCHW:
            graph.set_input(t, 0, src.inputs[0])
            t.attrs["src_format"] = "NHWC"
            graph.remove_node(src)
            continue
        users = t.outputs[0].consumers
        after = users[0][0] if len(users) == 1 else None
        if t.attrs["src_format"] == NC1HWC0 and _perm(after) == TO_NHWC:
            out = after.outputs[0]
            t.outputs[0].desc = out.desc
            t.attrs["dst_format"] = "NHWC"
            graph.replace_all_uses(out, t.outputs[0])
            graph.remove_node(after)


def _trans_data(graph: Graph, v: Value, src: TensorDesc, dst: TensorDesc, near: Node) -> Value:
    node = graph.add_node(graph.unique_name(f"{near.name}_trans_{src.format}_{dst.format}".replace("/", "_")),
                          "TransData", [v], [dst], attrs={"src_format": src.format, "dst_format": dst.format})
    node.meta.update({"engine": "AICORE", "core_type": "AIV", **{k: near.meta[k] for k in ("stream_id",)
                                                                if k in near.meta}})
    return node.outputs[0]


def _converted(graph: Graph, w: Value, fmt: str) -> Value:
    """A constant operand in its device format (FRACTAL_Z, FRACTAL_Z_C04, FRACTAL_Z_3D, FRACTAL_NZ), converted
    now and stored so in the weights."""
    origin = w.desc.origin_format if w.desc.origin_format in ("NCHW", "NCDHW", "ND") else "ND"
    if fmt in (FRACTAL_Z, FRACTAL_Z_C04):
        origin = "NCHW"
    elif fmt == FRACTAL_Z_3D:
        origin = "NCDHW"
    desc = _device_desc(TensorDesc(w.desc.shape, w.desc.dtype, origin, origin), fmt)
    v = graph.add_const(graph.unique_name(f"{w.producer.name}_{fmt.lower()}"), to_device(w.data, fmt, origin))
    v.desc = desc
    return v
