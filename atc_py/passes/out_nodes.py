"""--out_nodes: make the named node outputs (or output tensors) the model's outputs, in the given order."""
from __future__ import annotations

from ..errors import AtcError
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
