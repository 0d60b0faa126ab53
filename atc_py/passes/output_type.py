"""--output_type: the dtype of the model's outputs (all of them: FP32, FP16, UINT8, INT8), or per output
"node:index:TYPE;..." for outputs chosen with --out_nodes. A Cast is inserted before NetOutput."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import AtcError
from ..ir.graph import Graph
from ..ops.infer import infer_node

OUTPUT_TYPES = {"FP32": "float32", "FP16": "float16", "UINT8": "uint8", "INT8": "int8"}
REASON_ALL = ("The value must be FP32, FP16, UINT8, INT8. A node can only have one type. "
              "The correct example is: --output_type=FP32.")


@dataclass(frozen=True)
class OutputTypes:
    """--output_type parsed: `every` (a numpy dtype for all outputs) or `per` ((node, index, dtype, item) for
    outputs chosen with --out_nodes; the names are matched against the outputs when the graph is known)."""
    every: str = ""
    per: tuple[tuple[str, str, str, str], ...] = ()


def parse_output_type(text: str) -> OutputTypes:
    if not text:
        return OutputTypes()
    if ":" not in text:
        if text not in OUTPUT_TYPES:
            raise AtcError("E10001", value=text, parameter="--output_type", reason=REASON_ALL)
        return OutputTypes(every=OUTPUT_TYPES[text])
    per = []
    for item in (t for t in text.split(";") if t):
        parts = item.split(":")
        if len(parts) != 3 or not parts[1].isdigit():
            raise AtcError("E10001", value=item, parameter="--output_type",
                           reason='The parameter is invalid. Valid format "opname:index:dtype".')
        if parts[2] not in OUTPUT_TYPES:
            raise AtcError("E10001", value=item, parameter="--output_type", reason=REASON_ALL)
        per.append((parts[0], parts[1], OUTPUT_TYPES[parts[2]], item))
    return OutputTypes(per=tuple(per))


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
