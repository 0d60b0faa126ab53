"""--output_type: the dtype of the model's outputs (all of them: FP32, FP16, UINT8, INT8), or per output
"node:index:TYPE;..." for outputs chosen with --out_nodes. A Cast is inserted before NetOutput."""
from __future__ import annotations

from ..common.errors import AtcError
from ..ir.graph import Graph
from ..ops.core.infer import infer_node
from ..options.output_type import OutputTypes


def output_dtypes(spec: OutputTypes, output_names: list[str]) -> dict[int, str]:
    """Output index -> numpy dtype."""
    if spec.every:
        return {i: spec.every for i in range(len(output_names))}
    out: dict[int, str] = {}
    for node, index, dtype, item in spec.per:
        name = f"{node}:{index}"
        idx = next((i for i, n in enumerate(output_names) if n == name or (index == "0" and n == node)), None)
        if idx is None:
            raise AtcError("E10001", value=item, parameter="--output_type",
                           reason="In the mode of specified node, the correct example is: node1:0:FP16;node2:0:FP32."
                                  "The nodes set in --output_type must be found in --out_nodes.")
        out[idx] = dtype
    return out


def apply_output_type(graph: Graph, spec: OutputTypes) -> int:
    net = graph.net_output
    names = net.attrs.get("output_names") or [v.name for v in net.inputs]
    chosen = output_dtypes(spec, list(names))
    for idx, dt in sorted(chosen.items()):
        v = net.inputs[idx]
        if v.desc.dtype == dt:
            continue
        cast = graph.add_node(graph.unique_name(f"output_{idx}_{dt}"), "Cast", [v], [v.desc], {"dst_type": dt})
        infer_node(cast)
        graph.set_input(net, idx, cast.outputs[0])
    graph.topo_sort()
    return len(chosen)
