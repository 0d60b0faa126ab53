"""The `autofuse` pass: groups of vector ops become AscBackend nodes whose AscGraph says what they compute.

Which ops: every GE op with a lowering rule (lowering.py): elementwise and broadcast ops, casts, reductions
along axes, SoftmaxV2 / LogSoftmaxV2, LayerNorm, and so the patterns models are made of (RMSNorm, GELU and
SiLU chains, the bias and activation after a MatMul or Conv, the residual Add). Cube ops (MatMul, Conv)
keep their own kernels; their epilogues (relu_fusion's fused Relu, matmul_bias) stay where they are.

How: producer -> consumer edges are merged greedily in topological order (union of groups) when both ends
are fusable, carry the same compiler attributes, the union stays convex (no path leaves it and comes back,
so one kernel can run it) and its tensors share one iteration space (layout.py). Groups of two or more ops
become an AscBackend node (HintGraph from the lowering rules, ImplGraph from auto schedule); one op alone
keeps its own kernel. AscBackend nodes that feed each other (directly or through views: Reshape and co.) but
could not share an AscGraph are then put into one FusedAscBackend, whose kernel runs them back to back.

Runs per model after partitioning, like GE's automatic fusion per subgraph: dtypes are final and
--static_model_ops_lower_limit counted the graph's own ops; dynamic subgraphs fuse too (a dim unknown until run
time is a size variable; the host executor runs the fused node's tiling for the shapes it meets).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..common.errors import AtcError
from ..ir.graph import ASC_ORIGINS, ORIGIN_NAMES, ORIGIN_PERM, Graph, Node, Value
from . import ascir
from .build import HintBuilder, is_scalar_const
from .fused import FusedGraph, Member
from .graph import AscGraphError, check_contract
from .layout import Layout, plan_layout
from .lowering import RULES
from .schedule import Nest, schedule

MAX_GROUP_OPS = 48


@dataclass
class FuseStats:
    ops_fused: int = 0                  # ops that went into AscBackend nodes
    asc_backend: int = 0
    fused_asc_backend: int = 0
    names: list[str] = field(default_factory=list)


# what was decided per op (and where a fused op's values are): these do not separate ops; the lowering rules
# compute each member in the dtype its implementation mode gives it (_internal_dtype, passes/soc_kernels.py)
NOT_SCOPE = {ORIGIN_NAMES, ORIGIN_PERM, ASC_ORIGINS, "_precision_mode", "_saturate_fp16", "_internal_dtype",
             "_op_impl_mode"}


def _private(node: Node) -> dict:
    """Compiler and user attributes that scope an op (_super_kernel_scope, --op_attr_config's ...): the members
    of a group share them. The precision pass's record of its decision does not separate ops (the Casts it
    inserts have none, the ops it changed have _precision_mode): each node keeps its own dtypes in the graph."""
    return {k: v for k, v in node.attrs.items() if k.startswith("_") and k not in NOT_SCOPE}


def fusable(node: Node, roots: dict[int, Value] | None = None) -> bool:
    """An AI Core op with a lowering rule that accepts it, dtypes an AscGraph holds, no control edges, no
    tiling that depends on values (those keep their own kernels and tiling tasks). Not a custom op (a plugin's
    kernel for a builtin type is its own) nor an implementation the rules do not compute (Gelu's fast form)."""
    rule = RULES.get(node.op_type)
    if rule is None or node.control_inputs or node.meta.get("engine", "AICORE") != "AICORE":
        return False
    from ..ops import get_op  # (the op library imports autofuse: AscBackend)
    spec = get_op(node.op_type)
    if spec is None or spec.is_custom or spec.own_kernel_only(node.attrs):
        return False
    values = [v for v in node.inputs if v is not None] + node.outputs
    if any(v.desc.dtype not in ascir.DTYPES or min(v.desc.shape, default=0) < -1 for v in values):
        return False        # (a dim of -1, unknown until run time, is fine: it becomes a size variable)
    if any(k in node.attrs for k in ("_tiling_sink_op", "_dynamic_tiling_depend_op", "_force_unknown_shape")):
        return False
    if _unknown_broadcast(node, {} if roots is None else roots):
        return False
    return rule.accepts(node)


def _shape_root(v: Value, roots: dict[int, Value]) -> Value:
    """The value whose shape `v` provably has: up through ops whose output is the shape of their one non-constant
    input (Sigmoid(a), Add(a, bias), Cast(a)), so two values of one root have equal dims even where unknown.
    `roots` remembers each value's root: a chain of thousands of such ops is walked once, not once per op."""
    chain = []
    while id(v) not in roots and v.producer is not None and len(v.producer.outputs) == 1:
        live = [u for u in v.producer.inputs if u is not None and not u.is_const]
        if len(live) != 1 or tuple(live[0].desc.shape) != tuple(v.desc.shape):
            break
        chain.append(v)
        v = live[0]
    root = roots.get(id(v), v)
    for u in chain:
        roots[id(u)] = root
    return root


def _unknown_broadcast(node: Node, roots: dict[int, Value]) -> bool:
    """Two inputs of different shape roots with a dim unknown until run time at the same (right-aligned)
    position: the op may broadcast one of them (1 against the other's n: a causal mask built from [s, 1] and
    [1, t]), which one size variable for both cannot express. Such an op keeps its own kernel."""
    if sum(1 for v in node.inputs if v is not None and -1 in v.desc.shape) < 2:
        return False
    ins = list({id(r): r for r in (_shape_root(v, roots) for v in node.inputs if v is not None)}.values())
    if len(ins) < 2:
        return False
    rank = max(len(v.desc.shape) for v in ins)
    for k in range(1, rank + 1):
        if sum(1 for v in ins if len(v.desc.shape) >= k and v.desc.shape[-k] == -1) >= 2:
            return True
    return False


class _Groups:
    """Union of fusion groups with member lists in topological order."""

    def __init__(self, graph: Graph):
        self.order = {id(n): k for k, n in enumerate(graph.nodes)}
        self.of: dict[int, list[Node]] = {}

    def group(self, n: Node) -> list[Node]:
        return self.of.setdefault(id(n), [n])

    def merge(self, a: list[Node], b: list[Node]) -> list[Node]:
        merged = sorted(a + b, key=lambda n: self.order[id(n)])
        for n in merged:
            self.of[id(n)] = merged
        return merged

    def convex(self, members: list[Node]) -> bool:
        """No path from the set through an outside node back into it."""
        inside = {id(n) for n in members}
        last = max(self.order[id(n)] for n in members)
        todo = [c for n in members for v in n.outputs for c, _ in v.consumers if id(c) not in inside]
        seen: set[int] = set()
        while todo:
            x = todo.pop()
            if id(x) in seen or self.order.get(id(x), last + 1) > last:
                continue
            seen.add(id(x))
            for v in x.outputs:
                for c, _ in v.consumers:
                    if id(c) in inside:
                        return False
                    todo.append(c)
        return True


def find_groups(graph: Graph) -> list[tuple[list[Node], Layout]]:
    graph.topo_sort()
    roots: dict[int, Value] = {}
    ok = {id(n) for n in graph.nodes if fusable(n, roots)}
    gs = _Groups(graph)
    layouts: dict[int, Layout] = {}
    for node in graph.nodes:
        if id(node) not in ok:
            continue
        for v in node.inputs:
            p = v.producer if v is not None else None
            if p is None or id(p) not in ok or _private(p) != _private(node):
                continue
            a, b = gs.group(p), gs.group(node)
            if a is b or len(a) + len(b) > MAX_GROUP_OPS:
                continue
            trial = sorted(a + b, key=lambda n: gs.order[id(n)])
            if not gs.convex(trial):
                continue
            lay = plan_layout(trial)
            if lay is None:
                continue
            merged = gs.merge(a, b)
            layouts[id(merged)] = lay
    seen, out = set(), []
    for node in graph.nodes:
        g = gs.of.get(id(node))
        if g is not None and id(g) not in seen and len(g) > 1:
            seen.add(id(g))
            out.append((g, layouts[id(g)]))
    return out


def group_outputs(graph: Graph, members: list[Node]) -> list[Value]:
    """Values of the group read outside it (or graph outputs), in member order."""
    inside = {id(n) for n in members}
    net = graph.net_output
    return [v for n in members for v in n.outputs
            if any(id(c) not in inside for c, _ in v.consumers) or any(x is v for x in net.inputs)]


def build_ascbackend(graph: Graph, members: list[Node], layout: Layout, name: str):
    """The HintGraph and ImplGraph of a group; the values it reads and writes."""
    b = HintBuilder(name, layout)
    for n in members:
        RULES[n.op_type].lower(b, n)
    outs = group_outputs(graph, members)
    for v in outs:
        b.output(v)
    hint = b.g
    hint.check()
    impl = schedule(hint)
    impl.check()
    check_contract(hint, impl)
    Nest.of(impl, hint)
    return hint.freeze(), impl.freeze(), b.inputs, outs, b.origins


def autofuse(graph: Graph) -> FuseStats:
    """Replace every fusable group of `graph` with an AscBackend node (then chains of them joined by views with
    a FusedAscBackend). A graph the pass builds that breaks an AscGraph rule is an internal error naming it."""
    stats = FuseStats()
    dead: list[Node] = []
    built = []
    for members, layout in find_groups(graph):   # every graph first: layouts name the values as they are now
        if not group_outputs(graph, members):    # dead code (--optimization_switch dce:off keeps it): left as it is
            continue
        name = graph.unique_name(f"{members[-1].name}_ascbackend")
        try:
            built.append((members, name, *build_ascbackend(graph, members, layout, name)))
        except (AscGraphError, ValueError) as exc:
            raise AtcError("E19999", message=f"automatic fusion of {[n.name for n in members]}: {exc}") from None
        graph._names.add(name)
    moved: dict[int, Value] = {}                 # id(a group output) -> the fused node's output
    for members, name, hint, impl, ins, outs, origins in built:
        last = members[-1]
        modes = [n.attrs["_precision_mode"] for n in members if "_precision_mode" in n.attrs]
        attrs = {**_private(last), **({"_precision_mode": modes[-1]} if modes else {}), "ascgraph": hint,
                 "ascgraph_impl": impl, ASC_ORIGINS: origins,
                 ORIGIN_NAMES: list(dict.fromkeys(x for n in members for x in n.attrs.get(ORIGIN_NAMES, [n.name])))}
        graph._names.discard(name)
        new = graph.add_node(name, "AscBackend", [moved.get(id(v), v) for v in ins], [v.desc for v in outs], attrs)
        new.meta = dict(last.meta)
        new.meta["core_type"] = "AIV"
        for old, v in zip(outs, new.outputs):
            graph.replace_all_uses(old, v)
            moved[id(old)] = v
        for n in members:
            graph.detach(n)
        dead.extend(members)
        stats.ops_fused += len(members)
        stats.asc_backend += 1
        stats.names.append(name)
    graph.remove_nodes(dead)
    _drop_orphan_scalars(graph)
    graph.topo_sort()
    stats.fused_asc_backend = fuse_ascbackends(graph)
    return stats


def _drop_orphan_scalars(graph: Graph) -> None:
    """One-element constants that became Scalar nodes and feed nothing else any more."""
    orphans = [n for n in graph.nodes if n.op_type == "Const" and not n.outputs[0].consumers
               and is_scalar_const(n.outputs[0])]
    graph.remove_nodes(orphans)


VIEWS = ("Reshape", "Squeeze", "Unsqueeze", "Flatten")


def _through_views(v: Value) -> tuple[Node | None, list[Node]]:
    """The only consumer of v past a chain of single-consumer views, and the views."""
    views = []
    while len(v.consumers) == 1:
        c, _ = v.consumers[0]
        if c.op_type in VIEWS and c.inputs[0] is v and not c.control_inputs:
            views.append(c)
            v = c.outputs[0]
            continue
        return c, views
    return None, views


def fuse_ascbackends(graph: Graph) -> int:
    """AscBackend A -> (views) -> AscBackend B, A's value read by nothing else and the same compiler attributes
    (one scope), become one FusedAscBackend: B could not join A's AscGraph (a reshape between them, or
    tensors of another iteration space) but one kernel can run both. Chains grow as long as the pattern
    repeats. Returns the FusedAscBackend nodes made."""
    graph.topo_sort()
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    net = graph.net_output
    chains: list[list[Node]] = []
    chain_of: dict[int, list[Node]] = {}
    views_of: dict[int, list[Node]] = {}
    static = lambda n: all(x is None or x.desc.known for x in list(n.inputs) + n.outputs)   # noqa: E731
    for node in graph.nodes:
        if node.op_type != "AscBackend" or not static(node):   # a fused graph holds static shapes only
            continue
        for v in node.outputs:
            if any(x is v for x in net.inputs):
                continue
            nxt, views = _through_views(v)
            if nxt is None or nxt.op_type != "AscBackend" or _private(nxt) != _private(node) or id(nxt) in chain_of \
                    or not static(nxt):
                continue
            chain = chain_of.get(id(node))
            head = order[id(chain[0] if chain else node)]
            inside = {id(n) for n in (chain or [node])}
            via = id(views[-1].outputs[0]) if views else id(v)
            if any(x is not None and id(x) != via and x.producer is not None and id(x.producer) not in inside
                   and order[id(x.producer)] >= head for x in nxt.inputs):
                continue      # nxt also reads something computed after the chain began: not one kernel
            if chain is None:
                chain = [node]
                chains.append(chain)
                chain_of[id(node)] = chain
            chain.append(nxt)
            chain_of[id(nxt)] = chain
            views_of.setdefault(id(chain[0]), []).extend(views)
            break
    made = 0
    for chain in chains:
        _replace_chain(graph, chain, views_of.get(id(chain[0]), []))
        made += 1
    if made:
        graph.topo_sort()
    return made


def _replace_chain(graph: Graph, chain: list[Node], views: list[Node]) -> None:
    inside = {id(n) for n in chain} | {id(n) for n in views}
    source: dict[int, tuple[int, int]] = {}      # id(Value) -> (member, output) or (-1, fused input)
    ins: list[Value] = []
    members: list[Member] = []
    for j, n in enumerate(chain):
        refs, shapes = [], []
        for v in n.inputs:
            root = v
            while root.producer is not None and id(root.producer) in inside and root.producer.op_type in VIEWS:
                root = root.producer.inputs[0]
            if id(root) not in source:
                source[id(root)] = (-1, len(ins))
                ins.append(root)
            refs.append(source[id(root)])
            shapes.append(tuple(v.desc.shape))
        for k, v in enumerate(n.outputs):
            source[id(v)] = (j, k)
        members.append(Member(n.name, n.attrs["ascgraph"], n.attrs["ascgraph_impl"], refs, shapes))
    outs: list[Value] = []
    for n in chain:
        for v in n.outputs:
            if any(id(c) not in inside for c, _ in v.consumers) or any(x is v for x in graph.net_output.inputs):
                outs.append(v)
    for w in views:   # a view's value read outside the chain: export its source instead (same bytes)
        if any(id(c) not in inside for c, _ in w.outputs[0].consumers):
            raise AtcError("E19999", message=f"FusedAscBackend: view {w.name} is read outside the chain")
    fg = FusedGraph(graph.unique_name(f"{chain[-1].name}_fused"), len(ins), members, [source[id(v)] for v in outs])
    names = [x for n in chain for x in n.attrs.get(ORIGIN_NAMES, [n.name])]
    attrs = {**_private(chain[-1]), "fused_graph": fg, ORIGIN_NAMES: names,
             ASC_ORIGINS: [x for n in chain for x in n.attrs.get(ASC_ORIGINS, [])]}
    new = graph.add_node(fg.name, "FusedAscBackend", ins, [v.desc for v in outs], attrs)
    new.meta = dict(chain[-1].meta)
    for old, v in zip(outs, new.outputs):
        graph.replace_all_uses(old, v)
    for n in chain + views:
        graph.detach(n)
    graph.remove_nodes(chain + views)
