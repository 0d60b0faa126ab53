"""--insert_op_conf: an Aipp node after each configured model input (GE's InsertAippToGraph, static AIPP).

The input becomes the uint8 image the application feeds (NHWC, the shape atc_py/options/aipp.py gives each format);
the Aipp node produces what the model took before, so nothing behind it changes. Aipp computes NCHW: an NHWC
model input (a TensorFlow image, whose format is NHWC) gets a transpose behind it, as GE's format pass does."""
from __future__ import annotations

from ..common.errors import AtcError
from ..ir.graph import Graph, TensorDesc
from ..options.aipp import resolve

NHWC_TO_NCHW = (0, 3, 1, 2)
NCHW_TO_NHWC = (0, 2, 3, 1)


def insert_aipp(graph: Graph, configs) -> int:
    """`configs`: the aipp_op entries of --insert_op_conf (AippOpParams, parsed with the options)."""
    if not configs:
        return 0
    data = graph.data_nodes
    done: set[int] = set()
    for params in configs:
        node = data[params.related_input_rank] if params.related_input_rank < len(data) else None
        nhwc = node is not None and node.outputs[0].desc.format == "NHWC" and len(node.outputs[0].desc.shape) == 4
        shape = node.outputs[0].desc.shape if node is not None else ()
        spec = resolve(params, len(data), tuple(shape[i] for i in NHWC_TO_NCHW) if nhwc else shape)
        if spec.rank in done:
            raise AtcError("E10052", reason=f"two aipp_op entries configure related_input_rank {spec.rank}")
        done.add(spec.rank)
        v = node.outputs[0]
        if v.desc.dtype not in ("float32", "float16"):
            raise AtcError("E10052", reason=f"input {node.name} is {v.desc.dtype}; AIPP feeds float inputs")
        original = v.desc
        consumers = list(v.consumers)
        v.desc = TensorDesc(spec.image_shape(original.shape[0]), "uint8", "NHWC", "NHWC")
        _image_range(node, v.desc.shape)
        nchw = TensorDesc(tuple(original.shape[i] for i in NHWC_TO_NCHW), original.dtype, "NCHW", "NCHW") \
            if nhwc else original
        aipp = graph.add_node(graph.unique_name(f"{node.name}_0_aipp"), "Aipp", [v], [nchw],
                              {**spec.attrs(), "dst_type": original.dtype})
        out = aipp.outputs[0]
        if nhwc:
            out = graph.add_node(graph.unique_name(f"{node.name}_0_aipp_nhwc"), "TransposeD", [out], [original],
                                 {"perm": list(NCHW_TO_NHWC)}).outputs[0]
        for consumer, i in consumers:
            graph.set_input(consumer, i, out)
        node.attrs["_aipp_input_format"] = spec.input_format
    graph.topo_sort()
    return len(done)


def _image_range(node, image_shape: tuple) -> None:
    """A dynamic input's `_shape_range` (--input_shape -1 or lo~hi) as the image AIPP takes: the batch keeps its
    range, the image dims are the configured size (recorded for the float NCHW tensor they would not fit it)."""
    flat = node.attrs.get("_shape_range")
    if not flat:
        return
    if any(d < 0 for d in image_shape[1:]):
        raise AtcError("E10052", reason=f"input {node.name}: static AIPP takes images of one size; its H, W or C "
                                        "cannot be a range")
    ranges = [(d, d) for d in image_shape]
    ranges[0] = (flat[0], flat[1])
    node.attrs["_shape_range"] = [v for r in ranges for v in r]


def feed_fp16(graph: Graph, names: list[str]) -> int:
    """--input_fp16_nodes: each named graph input is fed as fp16 (a Cast to its model dtype follows it, which the
    precision pass then sinks or folds away)."""
    by_name = {n.name: n for n in graph.nodes}
    for name in names:
        node = by_name.get(name) or by_name.get(name.replace("/", "_").replace(":", "_"))
        if node is None:
            raise AtcError("E10016", opname=name, parameter="input_fp16_nodes")
        if node.op_type != "Data":
            raise AtcError("E10017", opname=name, parameter="input_fp16_nodes")
        if "_aipp_input_format" in node.attrs:
            raise AtcError("E10034", opname=name)
        v = node.outputs[0]
        if v.desc.dtype != "float32":
            continue
        consumers = list(v.consumers)
        original = v.desc
        v.desc = TensorDesc(original.shape, "float16", original.format, original.origin_format)
        cast = graph.add_node(graph.unique_name(f"{node.name}_fp32"), "Cast", [v], [original], {"dst_type": "float32"})
        for consumer, i in consumers:
            graph.set_input(consumer, i, cast.outputs[0])
    graph.topo_sort()
    return len(names)
