"""--output_type: the dtype of the model's outputs (all of them: FP32, FP16, UINT8, INT8), or per output
"node:index:TYPE;..." for outputs chosen with --out_nodes. A Cast is inserted before NetOutput."""
from __future__ import annotations

from ..errors import AtcError
from ..ir.graph import Graph
from ..ops.infer import infer_node

OUTPUT_TYPES = {"FP32": "float32", "FP16": "float16", "UINT8": "uint8", "INT8": "int8"}
REASON_ALL = ("The value must be FP32, FP16, UINT8, INT8. A node can only have one type. "
              "The correct example is: --output_type=FP32.")


def parse_output_type(text: str, output_names: list[str]) -> dict[int, str]:
    """Output index -> numpy dtype."""
    if not text:
        return {}
    if ":" not in text:
        if text not in OUTPUT_TYPES:
            raise AtcError("E10001", value=text, parameter="--output_type", reason=REASON_ALL)
        return {i: OUTPUT_TYPES[text] for i in range(len(output_names))}
    out: dict[int, str] = {}
    for item in (t for t in text.split(";") if t):
        parts = item.split(":")
        if len(parts) != 3 or not parts[1].isdigit():
            raise AtcError("E10001", value=item, parameter="--output_type",
                           reason='The parameter is invalid. Valid format "opname:index:dtype".')
        if parts[2] not in OUTPUT_TYPES:
            raise AtcError("E10001", value=item, parameter="--output_type", reason=REASON_ALL)
        name = f"{parts[0]}:{parts[1]}"
        idx = next((i for i, n in enumerate(output_names) if n == name or (parts[1] == "0" and n == parts[0])), None)
        if idx is None:
            raise AtcError("E10001", value=item, parameter="--output_type",
                           reason="In the mode of specified node, the correct example is: node1:0:FP16;node2:0:FP32."
                                  "The nodes set in --output_type must be found in --out_nodes.")
        out[idx] = OUTPUT_TYPES[parts[2]]
    return out


def apply_output_type(graph: Graph, text: str) -> int:
    net = graph.net_output
    names = net.attrs.get("output_names") or [v.name for v in net.inputs]
    chosen = parse_output_type(text, list(names))
    for idx, dt in sorted(chosen.items()):
        v = net.inputs[idx]
        if v.desc.dtype == dt:
            continue
        cast = graph.add_node(graph.unique_name(f"output_{idx}_{dt}"), "Cast", [v], [v.desc], {"dst_type": dt})
        infer_node(cast)
        graph.set_input(net, idx, cast.outputs[0])
    graph.topo_sort()
    return len(chosen)
