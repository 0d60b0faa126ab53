"""--op_attr_config FILE: a JSON map node name -> {attribute: value}, checked (passes/attr_config.py applies it)."""
from __future__ import annotations

from ..common.errors import AtcError
from ..common.userfiles import read_json

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
