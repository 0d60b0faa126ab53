"""--insert_op_conf: an Aipp node after each configured model input (GE's InsertAippToGraph, static AIPP).

The input becomes the uint8 image the application feeds (NHWC, the shape atc_py/aipp.py gives each format);
the Aipp node produces what the model took before, so nothing behind it changes."""
from __future__ import annotations

from ..aipp import parse_config, resolve
from ..errors import AtcError
from ..ir.graph import Graph, TensorDesc


def insert_aipp(graph: Graph, config_path: str) -> int:
    if not config_path:
        return 0
    data = graph.data_nodes
    done: set[int] = set()
    for params in parse_config(config_path):
        node = data[params.related_input_rank] if params.related_input_rank < len(data) else None
        spec = resolve(params, len(data), node.outputs[0].desc.shape if node is not None else ())
        if spec.rank in done:
            raise AtcError("E10052", reason=f"two aipp_op entries configure related_input_rank {spec.rank}")
        done.add(spec.rank)
        v = node.outputs[0]
        if v.desc.dtype not in ("float32", "float16"):
            raise AtcError("E10052", reason=f"input {node.name} is {v.desc.dtype}; AIPP feeds float inputs")
        original = v.desc
        consumers = list(v.consumers)
        v.desc = TensorDesc(spec.image_shape(original.shape[0]), "uint8", "NHWC", "NHWC")
        aipp = graph.add_node(graph.unique_name(f"{node.name}_0_aipp"), "Aipp", [v], [original],
                              {**spec.attrs(), "dst_type": original.dtype})
        for consumer, i in consumers:
            graph.set_input(consumer, i, aipp.outputs[0])
        node.attrs["_aipp_input_format"] = spec.input_format
    graph.topo_sort()
    return len(done)
