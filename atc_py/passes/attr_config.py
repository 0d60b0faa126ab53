"""--op_attr_config FILE: a JSON map node name -> {attribute: value} applied after parsing."""
from __future__ import annotations

from typing import Mapping

from ..errors import AtcError
from ..ir.graph import Graph
from ..userfiles import read_json

SCALARS = (bool, int, float, str)


def parse_attr_config(path: str) -> dict[str, dict]:
    """The file's node name -> {attribute: value}, checked ({} without the flag)."""
    if not path:
        return {}
    config = read_json(path, lambda why: AtcError("E10001", value=path, parameter="--op_attr_config",
                                                  reason=f"The file cannot be used: {why}"))
    if not isinstance(config, dict) or not all(isinstance(v, dict) for v in config.values()):
        raise AtcError("E10001", value=path, parameter="--op_attr_config",
                       reason='The file must map node names to attribute objects: {"node": {"attr": value}}.')
    for name in sorted(config):
        for key, value in sorted(config[name].items()):
            if not (isinstance(value, SCALARS) or (isinstance(value, list) and all(isinstance(x, SCALARS) for x in value))):
                raise AtcError("E10001", value=f"{name}.{key}", parameter="--op_attr_config",
                               reason="Attribute values must be booleans, numbers, strings or lists of them.")
    return config


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
