"""Format selection and TransData insertion (what CANN's FE does with the op information library's formats).

Convolutions and pooling run on NC1HWC0 ("5HD") activations and a convolution's filter is FRACTAL_Z on the
device: atc-py gives those ops their formats, carries 5HD through the format-agnostic elementwise ops between
them (a lone activation, a residual Add of two 5HD tensors), and inserts a TransData wherever a 5HD tensor meets
an op that wants the framework's layout — the model's inputs and outputs keep NCHW (NHWC for TensorFlow), so a
ResNet reads its input through one TransData and leaves through another after the last pooling. Constant
filters are converted here, at compile time, and stored in FRACTAL_Z (zero-padded to 16 x C0 fractals) in the
weights. Sizes follow: a 3-channel 5HD tensor occupies 16 channels in the memory plan.

Static graphs only (a shape decided at run time keeps ND); float16/float32 tensors (C0 = 16)."""
from __future__ import annotations

from ..ir.formats import FRACTAL_Z, NC1HWC0, device_shape, to_device
from ..ir.graph import Graph, Node, TensorDesc, Value
from ..ops import get_op
from ..ops.elementwise import BinaryOp, UnaryOp

WANTS_5HD = {"Conv2D": (0, 3), "MaxPoolV3": (0,), "AvgPoolV2": (0,), "GlobalAveragePool": (0,)}  # its 5HD inputs
FLOATS = ("float16", "float32")


def _activation(v: Value | None) -> bool:
    """A 4-D float feature map of known shape (what 5HD can hold)."""
    return v is not None and not v.is_const and len(v.desc.shape) == 4 and v.desc.known and \
        v.desc.dtype in FLOATS and v.desc.format in ("NCHW", "ND", "NHWC")


def _wants(node: Node) -> bool:
    if node.op_type not in WANTS_5HD or not _activation(node.inputs[0]) or not _activation(node.outputs[0]):
        return False
    if node.attrs.get("data_format", "NCHW") != "NCHW":
        return False
    if node.op_type == "Conv2D":
        w = node.inputs[1]
        return w is not None and w.is_const and len(w.desc.shape) == 4 and w.desc.dtype in FLOATS
    return True


def _propagates(node: Node, five: set[int]) -> bool:
    """An elementwise op whose every input is a 5HD tensor of its output's shape: it runs on 5HD as it is."""
    spec = get_op(node.op_type)
    if not isinstance(spec, (UnaryOp, BinaryOp)) or len(node.outputs) != 1 or not _activation(node.outputs[0]):
        return False
    ins = [v for v in node.inputs if v is not None]
    return bool(ins) and all(id(v) in five and v.desc.shape == node.outputs[0].desc.shape for v in ins)


def _device_desc(d: TensorDesc, fmt: str) -> TensorDesc:
    return TensorDesc(device_shape(d.shape, fmt, d.origin_format, d.dtype), d.dtype, fmt, d.origin_format,
                      tuple(d.shape))


def select_formats(graph: Graph) -> int:
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
    if not any(n.op_type in WANTS_5HD for n in chosen):
        return 0
    logical = {id(n.outputs[0]): n.outputs[0].desc for n in chosen}
    inserted = 0
    to_5hd: dict[int, Value] = {}
    filters: dict[int, Value] = {}
    for node in chosen:
        slots = WANTS_5HD.get(node.op_type, tuple(range(len(node.inputs))))
        for k in slots:
            v = node.inputs[k] if k < len(node.inputs) else None
            if v is None or id(v) in five:
                continue
            if id(v) not in to_5hd:
                to_5hd[id(v)] = _trans_data(graph, v, v.desc, _device_desc(v.desc, NC1HWC0), node)
                inserted += 1
            graph.set_input(node, k, to_5hd[id(v)])
        if node.op_type == "Conv2D":
            w = node.inputs[1]
            if id(w) not in filters:         # a filter shared by several convolutions is converted once
                filters[id(w)] = _fractal_z(graph, w)
            graph.set_input(node, 1, filters[id(w)])
            if not w.consumers:
                graph.remove_node(w.producer)
    for node in chosen:
        v = node.outputs[0]
        v.desc = _device_desc(logical[id(v)], NC1HWC0)
    for node in chosen:                  # consumers outside the 5HD region read the framework's layout back
        v = node.outputs[0]
        outside = [(c, k) for c, k in list(v.consumers) if not (c in chosen and
                   k in WANTS_5HD.get(c.op_type, tuple(range(len(c.inputs)))))]
        if outside:
            back = _trans_data(graph, v, v.desc, logical[id(v)], outside[0][0])
            inserted += 1
            for c, k in outside:
                graph.set_input(c, k, back)
    graph.topo_sort()
    return inserted


def _trans_data(graph: Graph, v: Value, src: TensorDesc, dst: TensorDesc, near: Node) -> Value:
    node = graph.add_node(graph.unique_name(f"{near.name}_trans_{src.format}_{dst.format}".replace("/", "_")),
                          "TransData", [v], [dst], attrs={"src_format": src.format, "dst_format": dst.format})
    node.meta.update({"engine": "AICORE", "core_type": "AIV", **{k: near.meta[k] for k in ("stream_id",)
                                                                if k in near.meta}})
    return node.outputs[0]


def _fractal_z(graph: Graph, w: Value) -> Value:
    """The filter in FRACTAL_Z, converted now and stored so in the weights."""
    desc = _device_desc(TensorDesc(w.desc.shape, w.desc.dtype, "NCHW", "NCHW"), FRACTAL_Z)
    v = graph.add_const(graph.unique_name(f"{w.producer.name}_fractal_z"), to_device(w.data, FRACTAL_Z, "NCHW"))
    v.desc = desc
    return v
