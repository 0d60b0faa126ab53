"""The model without its unsupported nodes, for the pre-check: every supported node still gets the engine its
kernel would have, though the whole model cannot build.

Each unsupported top-level node (or the If / Loop / Scan that holds one in a subgraph) is cut out: the tensors it
made become graph inputs (with the type and shape ONNX's shape inference gives them; a dimension it cannot tell
is dynamic), the tensors it read become graph outputs (so that the nodes making them are not dead code), and a
node that reads a cut tensor of unknown type is cut too (it has no kernel anyone could choose)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..frontend.onnx import onnx_lite as onnx

SHAPE_DATA_LIMIT = 4096   # bytes of an initializer shape inference gets to read (shape tensors, not weights)


@dataclass
class Cut:
    """The cut model and why each cut node that was not itself unsupported has no engine (label -> reason)."""
    model: object
    reasons: dict[str, str] = field(default_factory=dict)


def _label(node, k: int) -> str:
    return node.name or f"{node.op_type}_{k}"


def _inferred_types(model, weights: dict) -> dict:
    """name -> TypeProto of every tensor ONNX's shape inference can type (empty when it cannot run)."""
    try:
        from onnx import shape_inference
    except ImportError:     # the onnx package is optional at run time
        return {}
    probe = type(model)()
    probe.CopyFrom(model)
    for t in probe.graph.initializer:
        arr = weights.get(t.name)
        nbytes = getattr(arr, "nbytes", None)
        if not t.raw_data and nbytes is not None and nbytes <= SHAPE_DATA_LIMIT and hasattr(arr, "tobytes"):
            t.raw_data = arr.tobytes()
    try:
        inferred = shape_inference.infer_shapes(probe, check_type=False, strict_mode=False)
    except Exception:   # noqa: BLE001 -- inference is a best effort here; an untyped tensor's readers are cut
        return {}
    g = inferred.graph
    return {v.name: v.type for v in list(g.value_info) + list(g.input) + list(g.output)}


def _known(t) -> bool:
    return t is not None and t.HasField("tensor_type") and t.tensor_type.elem_type != 0


def _subgraph_names(node) -> set[str]:
    """Names a node's subgraphs read from the outer scope (every name they mention: a superset is harmless)."""
    from ..frontend.onnx.converter import _all_nodes
    names: set[str] = set()
    for a in node.attribute:
        subs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs) \
            if a.type == onnx.AttributeProto.GRAPHS else []
        for g in subs:
            for n, _ in _all_nodes(g):
                names.update(n.input)
    return names


def without_unsupported(model, weights: dict, unsupported: set[str]) -> Cut:
    """`unsupported`: labels as the pre-check names nodes ('loop/body/add' inside subgraphs)."""
    g = model.graph
    owners = {label.split("/")[0] for label in unsupported}
    nodes = list(g.node)
    labels = [_label(n, k) for k, n in enumerate(nodes)]
    cut = {i for i, label in enumerate(labels) if label in owners}
    reasons: dict[str, str] = {}
    types = _inferred_types(model, weights)
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if _known(v.type):
            types.setdefault(v.name, v.type)
    reads = [set(n.input) | _subgraph_names(n) for n in nodes]
    changed = True
    while changed:    # a reader of a cut tensor whose type nobody knows is cut too
        changed = False
        made = {o: i for i in cut for o in nodes[i].output if o}
        for i, n in enumerate(nodes):
            if i in cut:
                continue
            untyped = sorted(x for x in reads[i] if x in made and not _known(types.get(x)))
            if untyped:
                cut.add(i)
                maker = labels[made[untyped[0]]]
                whose = f"the unsupported {maker}" if maker in owners else f"{maker} (no engine either)"
                reasons[labels[i]] = f"no engine: it reads {untyped[0]}, whose type is not known, made by {whose}"
                changed = True
    made_by_cut = {o for i in cut for o in nodes[i].output if o}
    made_by_kept = {o for i, n in enumerate(nodes) if i not in cut for o in n.output if o}
    kept_reads = set().union(*(reads[i] for i in range(len(nodes)) if i not in cut)) if nodes else set()
    cut_reads = set().union(*(set(nodes[i].input) for i in cut)) if cut else set()

    out = type(model)()
    out.CopyFrom(model)
    og = out.graph
    del og.node[:]
    og.node.extend(n for i, n in enumerate(nodes) if i not in cut)
    old_outputs = list(g.output)
    del og.output[:]
    og.output.extend(v for v in old_outputs if v.name not in made_by_cut)
    have = {v.name for v in og.output}
    for name in sorted(cut_reads & made_by_kept - have):       # kept alive: an unsupported node read them
        vi = og.output.add()
        vi.name = name
        if _known(types.get(name)):
            vi.type.CopyFrom(types[name])
    for name in sorted(kept_reads & made_by_cut):                # made by a cut node: fed from outside
        vi = og.input.add()
        vi.name = name
        vi.type.CopyFrom(types[name])
    return Cut(out, reasons)
