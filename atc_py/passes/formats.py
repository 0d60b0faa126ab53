"""Format selection and TransData insertion (what CANN's FE does with the op information library's formats).

Convolutions and pooling run on NC1HWC0 ("5HD") activations and a convolution's filter is FRACTAL_Z on the
device: atc-py gives those ops their formats, carries 5HD through the format-agnostic elementwise ops between
them (a lone activation, a residual Add of two 5HD tensors), and inserts a TransData wherever a 5HD tensor meets
an op that wants the framework's layout — the model's inputs and outputs keep NCHW (NHWC for TensorFlow), so a
ResNet reads its input through one TransData and leaves through another after the last pooling. Constant
filters are converted here, at compile time, and stored in FRACTAL_Z (zero-padded to 16 x C0 fractals) in the
weights. Sizes follow: a 3-channel 5HD tensor occupies 16 channels in the memory plan.

Which op takes which format is data beside its registration (OpSpec.formats, the op information library); static
graphs only (a shape decided at run time keeps ND); float16/float32 tensors (C0 = 16)."""
from __future__ import annotations

from ..ir.formats import C04, FRACTAL_Z, FRACTAL_Z_C04, NC1HWC0, NC1HWC0_C04, device_shape, to_device
from ..ir.graph import Graph, Node, TensorDesc, Value
from ..ops import get_op
from ..ops.elementwise import BinaryOp, UnaryOp

def _five_hd_slots(op_type: str) -> tuple[int, ...] | None:
    """The inputs an op's registration takes in NC1HWC0 (OpSpec.formats), None for an op without 5HD."""
    spec = get_op(op_type)
    fmts = getattr(spec, "formats", {}) if spec is not None else {}
    if fmts.get("y") != NC1HWC0:
        return None
    return tuple(k for k, name in enumerate(spec.inputs) if fmts.get(name.rstrip("?")) == NC1HWC0)


def _filter_slots(op_type: str) -> tuple[int, ...]:
    spec = get_op(op_type)
    return tuple(k for k, name in enumerate(spec.inputs) if spec.formats.get(name.rstrip("?")) == FRACTAL_Z)
FLOATS = ("float16", "float32")
REDUCTIONS = {"Sum", "Mean", "Max", "Min", "Prod"}          # AscIR reductions: a group with one is not elementwise
TO_NCHW, TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


def _activation(v: Value | None) -> bool:
    """A 4-D float feature map of known shape (what 5HD can hold)."""
    return v is not None and not v.is_const and len(v.desc.shape) == 4 and v.desc.known and \
        v.desc.dtype in FLOATS and v.desc.format in ("NCHW", "ND", "NHWC")


def _wants(node: Node) -> bool:
    """An op whose registration takes 5HD (a convolution, a pooling), on a float NCHW feature map, its filters
    constant (converted here)."""
    if _five_hd_slots(node.op_type) is None or not node.inputs or not _activation(node.inputs[0]) or \
            not _activation(node.outputs[0]) or node.attrs.get("data_format", "NCHW") != "NCHW":
        return False
    for k in _filter_slots(node.op_type):
        w = node.inputs[k] if k < len(node.inputs) else None
        if w is None or not w.is_const or len(w.desc.shape) != 4 or w.desc.dtype not in FLOATS:
            return False
    return True


def _elementwise(node: Node) -> bool:
    """A vector op CANN runs on 5HD as it is: elementwise math, an autofused group of it without reductions, a
    constant pad of H and W only."""
    if isinstance(get_op(node.op_type), (UnaryOp, BinaryOp)):
        return True
    if node.op_type == "PadV3D":
        pads = [int(v) for v in node.attrs.get("paddings") or []]
        return len(pads) == 8 and not any(pads[:4]) and node.attrs.get("mode", "constant") == "constant"
    hint = node.attrs.get("ascgraph") if node.op_type == "AscBackend" else None
    return hint is not None and not any(n.type in REDUCTIONS for n in hint.nodes)


def _propagates(node: Node, five: set[int]) -> bool:
    """An elementwise op over 5HD tensors of its output's N and C (a per-channel gate broadcasts over H, W): it
    runs on 5HD as it is; its constants stay as they are."""
    if not _elementwise(node) or len(node.outputs) != 1 or not _activation(node.outputs[0]):
        return False
    n, c = node.outputs[0].desc.shape[:2]
    ins = [v for v in node.inputs if v is not None and not v.is_const]
    return bool(ins) and all(id(v) in five and v.desc.shape[:2] == (n, c) for v in ins)


def _slots(node: Node) -> tuple[int, ...]:
    """The inputs of a 5HD node that are 5HD."""
    slots = _five_hd_slots(node.op_type)
    if slots is not None:
        return slots
    return tuple(k for k, v in enumerate(node.inputs) if v is not None and not v.is_const)


def _device_desc(d: TensorDesc, fmt: str) -> TensorDesc:
    return TensorDesc(device_shape(d.shape, fmt, d.origin_format, d.dtype), d.dtype, fmt, d.origin_format,
                      tuple(d.shape))


def _small_channel(node: Node, k: int, v: Value, enabled: bool) -> bool:
    """--enable_small_channel: a convolution reading a feature map of <= 4 channels from outside 5HD (the image)
    takes it as NC1HWC0_C04 and its filter as FRACTAL_Z_C04 (4 channels padded, not 16)."""
    return enabled and node.op_type == "Conv2D" and k == 0 and v.desc.shape[1] <= C04 and \
        int(node.attrs.get("groups", 1) or 1) == 1


def select_formats(graph: Graph, small_channel: bool = False) -> int:
    """Give convolutions, pooling and the elementwise ops between them NC1HWC0 / FRACTAL_Z; returns the
    TransData nodes inserted."""
    if any(n.subgraphs for n in graph.nodes) or not any(_wants(n) for n in graph.nodes):
        return 0
    graph.topo_sort()
    five: set[int] = set()               # id(Value) of the tensors that are 5HD
    chosen: list[Node] = []
    for node in graph.nodes:
        if _wants(node) or (_propagates(node, five) and node.op_type != "Data"):
            chosen.append(node)
            five.add(id(node.outputs[0]))
    if not any(_five_hd_slots(n.op_type) is not None for n in chosen):
        return 0
    members = {id(n) for n in chosen}
    logical = {id(n.outputs[0]): n.outputs[0].desc for n in chosen}
    inserted = 0
    to_5hd: dict[int, Value] = {}
    filters: dict[int, Value] = {}
    for node in chosen:
        c04 = False
        for k in _slots(node):
            v = node.inputs[k] if k < len(node.inputs) else None
            if v is None or id(v) in five:
                continue
            fmt = NC1HWC0_C04 if _small_channel(node, k, v, small_channel) else NC1HWC0
            c04 |= fmt == NC1HWC0_C04
            if (id(v), fmt) not in to_5hd:
                to_5hd[(id(v), fmt)] = _trans_data(graph, v, v.desc, _device_desc(v.desc, fmt), node)
                inserted += 1
            graph.set_input(node, k, to_5hd[(id(v), fmt)])
        for k in _filter_slots(node.op_type) if _five_hd_slots(node.op_type) is not None else ():
            w = node.inputs[k]
            fmt = FRACTAL_Z_C04 if c04 else FRACTAL_Z
            if (id(w), fmt) not in filters:         # a filter shared by several convolutions is converted once
                filters[(id(w), fmt)] = _fractal_z(graph, w, fmt)
            graph.set_input(node, k, filters[(id(w), fmt)])
            if not w.consumers:
                graph.remove_node(w.producer)
    for node in chosen:
        v = node.outputs[0]
        v.desc = _device_desc(logical[id(v)], NC1HWC0)
    for node in chosen:                  # consumers outside the 5HD region read the framework's layout back
        v = node.outputs[0]
        outside = [(c, k) for c, k in list(v.consumers) if not (id(c) in members and k in _slots(c))]
        if outside:
            back = _trans_data(graph, v, v.desc, logical[id(v)], outside[0][0])
            inserted += 1
            for c, k in outside:
                graph.set_input(c, k, back)
    _from_nhwc(graph)
    graph.topo_sort()
    return inserted


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


def _fractal_z(graph: Graph, w: Value, fmt: str = FRACTAL_Z) -> Value:
    """The filter in FRACTAL_Z (or FRACTAL_Z_C04), converted now and stored so in the weights."""
    desc = _device_desc(TensorDesc(w.desc.shape, w.desc.dtype, "NCHW", "NCHW"), fmt)
    v = graph.add_const(graph.unique_name(f"{w.producer.name}_{fmt.lower()}"), to_device(w.data, fmt, "NCHW"))
    v.desc = desc
    return v
