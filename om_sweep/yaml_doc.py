"""A YAML sweep file read as YAML defines it: a mapping's keys are unique. PyYAML keeps the last of two equal
keys and drops the other value without a word, so a sweep file with `grid:` twice would run half the sweep
it names. The composed document is walked once (each node once: anchors and aliases share nodes) before it
is constructed; a repeated key is refused naming where it is and both lines (E40001), syntax errors are
E40002. Merge keys (`<<`) keep their meaning: they may be overridden."""
from __future__ import annotations

from atc_py.common.errors import AtcError

MERGE = "tag:yaml.org,2002:merge"


def load_yaml(text: str, path: str):
    """The parsed document (a safe loader: plain data only)."""
    try:
        import yaml
    except ImportError:
        raise AtcError("E40008", package="pyyaml") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)   # libyaml's: ~6x faster on a large file
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _unique_keys(loader, node, path)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise AtcError("E40002", path=path, reason=f"YAML syntax error{where}: {problem}") from None
    finally:
        loader.dispose()


def _unique_keys(loader, root, path: str) -> None:
    import yaml
    seen_nodes: set[int] = set()
    stack = [(root, "")]
    while stack:
        node, where = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{where}[{k}]") for k, item in enumerate(node.value))
        elif isinstance(node, yaml.MappingNode):
            lines: dict[object, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == MERGE or not isinstance(key_node, yaml.ScalarNode):
                    stack.append((value_node, where))
                    continue
                key = (key_node.tag, loader.construct_object(key_node))
                name = f"{where}.{key[1]}" if where else str(key[1])
                if key in lines:
                    raise AtcError("E40001", path=path, field=name,
                                   reason=f"the key is given twice (lines {lines[key]} and "
                                          f"{key_node.start_mark.line + 1}); YAML keys are unique, and one of the "
                                          "two values would be dropped")
                lines[key] = key_node.start_mark.line + 1
                stack.append((value_node, name))
