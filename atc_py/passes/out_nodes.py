"""--out_nodes: make the named node outputs (or output tensors) the model's outputs, in the given order."""
from __future__ import annotations

from ..common.errors import AtcError
from ..ir.graph import Graph


def apply_out_nodes(graph: Graph, items: list[tuple[str, int | None]], node_outputs: dict[str, list[str]],
                    values: dict) -> None:
    if not items:
        return
    chosen, names = [], []
    for name, idx in items:
        if idx is None:
            if name not in values:
                raise AtcError("E10016", opname=name, parameter="out_nodes")
            tensor = name
        else:
            outs = node_outputs.get(name)
            if outs is None and _is_graph_input(values.get(name)):
                outs = [name]          # a Data node: its one output is the input tensor of that name
            if outs is None:
                raise AtcError("E10016", opname=name, parameter="out_nodes")
            if idx >= len(outs) or not outs[idx]:
                raise AtcError("E10003", value=f"{name}:{idx}", parameter="out_nodes",
                               reason=f"The index {idx} is out of range: node {name} has {len(outs)} outputs")
            tensor = outs[idx]
        chosen.append(values[tensor])
        names.append(tensor)
    net = graph.net_output
    graph.remove_node(net)
    graph.add_node("NetOutput", "NetOutput", chosen, [], attrs={"output_names": names})


def _is_graph_input(value) -> bool:
    """GE resolves --out_nodes by node name, and a model input is a Data node named after it."""
    return value is not None and value.producer is not None and value.producer.op_type == "Data"
