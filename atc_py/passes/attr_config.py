"""--op_attr_config: the parsed node name -> {attribute: value} map (options/attr_config.py) set on the graph."""
from __future__ import annotations

from typing import Mapping

from ..common.errors import AtcError
from ..ir.graph import Graph


def apply_attr_config(graph: Graph, config: Mapping[str, Mapping]) -> int:
    """Sets each configured node's attributes (E10016 for a node the graph does not have)."""
    count = 0
    for name in sorted(config):
        node = graph.node(name) or graph.node(name.replace("/", "_").replace(":", "_"))
        if node is None:
            raise AtcError("E10016", opname=name, parameter="op_attr_config")
        for key, value in sorted(config[name].items()):
            node.attrs[key] = value
            count += 1
    return count
