"""TensorFlow v1 control flow -> functional While / If. (GE's parser keeps the v1 ops and lowers them to
StreamSwitch / StreamActive in OptimizeStage1_3; here a v1 loop becomes a label loop and a v1 cond an If that
engines/labels.py lowers with StreamSwitch as GE does.)

A v1 loop is a frame: Enter nodes bring values in (loop variables, or loop invariants when no Merge reads
them), each loop variable k is Merge(Enter_k, NextIteration_k) -> Switch(merge, LoopCond) whose port 1 feeds
the body and port 0 the Exit. The rewrite, innermost frame first, builds two library functions over
(loop variables..., invariants...):
  cond = the nodes between the Merges / invariant Enters and LoopCond's input,
  body = the nodes between the Switches' port 1 / invariant Enters and the NextIterations' inputs,
replaces the frame by one While node (its outputs replace the Exits) and lets the functional path convert it.
Constants the bodies read are copied into them. A frame that is not such a loop (no LoopCond, a Merge
without its NextIteration, a value reaching into the loop without an Enter) is an E10041 naming the node.
"""
from __future__ import annotations

from collections import deque

from ...common.errors import AtcError
from ...proto import tf_graph_pb2 as tf

MAX_FRAMES = 4096
V1_COND = "_atc_v1_cond"    # marks an If rebuilt from Switch / Merge


def _ref(name: str) -> tuple[str, int, bool]:
    if name.startswith("^"):
        return name[1:], 0, True
    node, sep, k = name.rpartition(":")
    if not sep or not k.isdigit():
        return name, 0, False
    return node, int(k), False


class _Frames:
    def __init__(self, gd: tf.GraphDef, path: str):
        self.gd, self.path = gd, path
        self.by_name = {n.name: n for n in gd.node}
        self.users: dict[str, list[tf.NodeDef]] = {}
        for n in gd.node:
            for i in n.input:
                self.users.setdefault(_ref(i)[0], []).append(n)

    def fail(self, node: str, reason: str) -> AtcError:
        return AtcError("E10041", path=self.path, reason=f"node {node}: {reason}")

    def frame_of(self, enter: tf.NodeDef) -> str:
        return enter.attr["frame_name"].s.decode("utf-8", "replace") if "frame_name" in enter.attr else ""

    def region(self, frame: str) -> list[tf.NodeDef]:
        """Nodes reachable from the frame's Enters without leaving through its Exits (Exits included)."""
        seen, q = {}, deque(n for n in self.gd.node if n.op == "Enter" and self.frame_of(n) == frame)
        for n in q:
            seen[n.name] = n
        while q:
            n = q.popleft()
            if n.op == "Exit":
                continue
            for u in self.users.get(n.name, []):
                if u.name not in seen:
                    seen[u.name] = u
                    q.append(u)
        return list(seen.values())

    def innermost(self) -> str | None:
        frames = sorted({self.frame_of(n) for n in self.gd.node if n.op == "Enter"})
        for f in frames:
            inner = [n for n in self.region(f) if n.op == "Enter" and self.frame_of(n) != f]
            if not inner:
                return f
        return frames[0] if frames else None


def functionalize(gd: tf.GraphDef, path: str = "graph") -> tf.GraphDef:
    """A GraphDef without v1 control flow: conds (Switch/Merge) become If, then loops become While (unchanged
    if it has none)."""
    if not any(n.op in ("Enter", "NextIteration", "LoopCond", "Merge") for n in gd.node):
        return gd
    gd = tf.GraphDef.FromString(gd.SerializeToString())
    for count in range(MAX_FRAMES):
        group = _innermost_cond(_Frames(gd, path))
        if group is None:
            break
        gd = _rewrite_cond(_Frames(gd, path), group, count)
    for count in range(MAX_FRAMES):
        fr = _Frames(gd, path)
        frame = fr.innermost()
        if frame is None:
            break
        gd = _rewrite(fr, frame, count)
    left = [n.name for n in gd.node if n.op in ("Enter", "Exit", "NextIteration", "LoopCond")]
    if left:
        raise AtcError("E10041", path=path, reason=f"node {left[0]}: v1 control flow that is not a loop")
    return gd


def _function(fr: _Frames, fname: str, args: list[str], outputs: list[str], arg_of: dict[tuple[str, int], str],
              inside, what: str) -> tf.FunctionDef:
    """A library function of the nodes `outputs` need, back to the values `arg_of` maps to arguments (an
    Enter's output counts for its port 0); constants are copied in; refs in function form. `inside(name)`:
    may the body read that node (else: E10041 '... reads X, which enters {what}')."""
    def arg_for(src: str, k: int) -> str | None:
        if (src, k) in arg_of:
            return arg_of[(src, k)]
        node = fr.by_name.get(src)
        return arg_of.get((src, 0)) if node is not None and node.op == "Enter" else None

    fn = tf.FunctionDef()
    fn.signature.name = fname
    for a in args:
        fn.signature.input_arg.add(name=a)
    need, q, seen = [], deque(_ref(o)[0] for o in outputs if arg_for(*_ref(o)[:2]) is None), set()
    while q:
        n = q.popleft()
        if n in seen:
            continue
        seen.add(n)
        node = fr.by_name.get(n)
        if node is None:
            raise fr.fail(n, "is read by control flow but is not in the graph")
        need.append(node)
        for i in node.input:
            src, k, ctrl = _ref(i)
            if ctrl or arg_for(src, k) is not None:
                continue
            if not inside(src) and fr.by_name.get(src, tf.NodeDef()).op != "Const":
                raise fr.fail(node.name, f"reads {src}, which enters {what}")
            q.append(src)
    for node in need:
        c = fn.node_def.add()
        c.CopyFrom(node)
        del c.input[:]
        for i in node.input:
            src, k, ctrl = _ref(i)
            if not ctrl:
                c.input.append(arg_for(src, k) or f"{src}:output:{k}")
    for k, o in enumerate(outputs):
        fn.signature.output_arg.add(name=f"out{k}")
        src, idx, _ = _ref(o)
        fn.ret[f"out{k}"] = arg_for(src, idx) or f"{src}:output:{idx}"
    return fn


def _rewrite(fr: _Frames, frame: str, count: int) -> tf.GraphDef:
    gd = fr.gd
    members = fr.region(frame)
    names = {n.name for n in members}
    enters = [n for n in members if n.op == "Enter" and fr.frame_of(n) == frame]
    conds = [n for n in members if n.op == "LoopCond"]
    if len(conds) != 1:
        raise fr.fail(enters[0].name if enters else frame, f"frame {frame!r} has {len(conds)} LoopCond nodes; "
                                                          "a v1 loop has one (a cycle that is not a loop)")
    loop_cond = conds[0]
    merges, invariants = [], []
    for e in enters:
        ms = [u for u in fr.users.get(e.name, []) if u.op == "Merge"]
        if ms:
            merges.append((e, ms[0]))
        else:
            invariants.append(e)
    vars_ = []
    for e, m in merges:
        ins = [_ref(i)[0] for i in m.input if not i.startswith("^")]
        nxt = [fr.by_name[x] for x in ins if x in fr.by_name and fr.by_name[x].op == "NextIteration"]
        if len(ins) != 2 or len(nxt) != 1:
            raise fr.fail(m.name, "a loop Merge needs its Enter and one NextIteration (a cycle that is not a loop)")
        sw = [u for u in fr.users.get(m.name, []) if u.op == "Switch"]
        if len(sw) != 1:
            raise fr.fail(m.name, "a loop Merge feeds one Switch on the LoopCond")
        exits = [u for u in fr.users.get(sw[0].name, []) if u.op == "Exit"]
        vars_.append((e, m, sw[0], nxt[0], exits[0] if exits else None))
    tag = frame.replace("/", "_") or f"frame{count}"
    args = [f"v{k}" for k in range(len(vars_))] + [f"inv{k}" for k in range(len(invariants))]

    inv_arg = {(e.name, 0): f"inv{k}" for k, e in enumerate(invariants)}
    cond_args = {(m.name, 0): f"v{k}" for k, (_, m, _, _, _) in enumerate(vars_)} | inv_arg
    body_args = {(sw.name, 1): f"v{k}" for k, (_, _, sw, _, _) in enumerate(vars_)} | inv_arg
    pred = [i for i in loop_cond.input if not i.startswith("^")][0]
    inside = lambda src: src in names   # noqa: E731
    cond = _function(fr, f"{tag}_cond_{count}", args, [pred], cond_args, inside, "the loop without an Enter")
    body = _function(fr, f"{tag}_body_{count}", args, [[i for i in n.input if not i.startswith("^")][0]
                                                        for _, _, _, n, _ in vars_], body_args, inside,
                     "the loop without an Enter")
    for k in range(len(invariants)):        # invariants pass through the body unchanged
        body.signature.output_arg.add(name=f"inv_out{k}")
        body.ret[f"inv_out{k}"] = f"inv{k}"
    gd.library.function.extend([cond, body])
    wname = f"{tag}_while_{count}"
    w = tf.NodeDef(name=wname, op="While")
    w.input.extend([e.input[0] for e, _, _, _, _ in vars_] + [e.input[0] for e in invariants])
    w.attr["cond"].func.name = cond.signature.name
    w.attr["body"].func.name = body.signature.name
    out_of = {x.name: k for k, (_, _, _, _, x) in enumerate(vars_) if x is not None}
    return _splice(fr, names, w, out_of, names, f"loop {frame!r} without an Exit")


def _splice(fr: _Frames, region: set[str], node: tf.NodeDef, out_of: dict[str, int], anchors: set[str],
            where: str) -> tf.GraphDef:
    """The GraphDef with `region` replaced by `node` (placed where the first of `anchors` stood, else last):
    a read of region node X in `out_of` becomes output out_of[X] of `node`; any other data read into the
    region is an error naming `where`."""
    gd, name = fr.gd, node.name
    new = tf.GraphDef(library=gd.library, versions=gd.versions)
    placed = False
    for n in gd.node:
        if n.name in region:
            if not placed and n.name in anchors:
                new.node.add().CopyFrom(node)
                placed = True
            continue
        c = new.node.add()
        c.CopyFrom(n)
        del c.input[:]
        for i in n.input:
            src, _, ctrl = _ref(i)
            if src in out_of:
                c.input.append(f"^{name}" if ctrl else f"{name}:{out_of[src]}")
            elif src in region:
                if not ctrl:
                    raise fr.fail(n.name, f"reads {src} inside {where}")
            else:
                c.input.append(i)
    if not placed:
        new.node.add().CopyFrom(node)
    return new


# -- conds: Switch(x, pred) ... Merge(then, else) -> If ----------------------------------------------------------
def _is_loop_merge(fr: _Frames, m: tf.NodeDef) -> bool:
    return any(fr.by_name.get(_ref(i)[0], tf.NodeDef()).op in ("NextIteration", "Enter") for i in m.input)


def _reach(fr: _Frames, start: str) -> tuple[set[str], set[tuple[str, int]]]:
    """Nodes backward from `start` up to Switch outputs: (nodes passed, (switch, port) reached)."""
    nodes, ports, q = set(), set(), deque([start])
    while q:
        ref = q.popleft()
        src, k, _ = _ref(ref)
        node = fr.by_name.get(src)
        if node is None or (src in nodes and node.op != "Switch"):
            continue
        if node.op == "Switch":
            ports.add((src, k))
            continue
        nodes.add(src)
        q.extend(i for i in node.input if not i.startswith("^"))
    return nodes, ports


def _innermost_cond(fr: _Frames):
    """(pred ref, [(merge, then input, else input)], then nodes, else nodes) of a cond with no Merge inside."""
    groups: dict[str, list] = {}
    for m in fr.gd.node:
        if m.op != "Merge" or _is_loop_merge(fr, m):
            continue
        ins = [i for i in m.input if not i.startswith("^")]
        if len(ins) != 2:
            raise fr.fail(m.name, f"a cond Merge joins two branches, this one {len(ins)}")
        sides = [_reach(fr, i) for i in ins]
        switches = {sw for _, ports in sides for sw, _ in ports}
        preds = {[i for i in fr.by_name[sw].input if not i.startswith("^")][1] for sw in switches}
        if len(preds) != 1:
            raise fr.fail(m.name, "a Merge whose branches come from Switches on different predicates (or none)")
        p1 = [bool(ports) and all(port == 1 for _, port in ports) for _, ports in sides]
        p0 = [bool(ports) and all(port == 0 for _, port in ports) for _, ports in sides]
        if p1[0] and p0[1]:
            then_i, else_i, order = ins[0], ins[1], (0, 1)
        elif p1[1] and p0[0]:
            then_i, else_i, order = ins[1], ins[0], (1, 0)
        else:
            raise fr.fail(m.name, "its inputs do not come one from each side of the Switches (not a cond)")
        groups.setdefault(preds.pop(), []).append((m, then_i, else_i, sides[order[0]][0], sides[order[1]][0]))
    for pred, ms in sorted(groups.items()):
        inner = set().union(*(t | e for _, _, _, t, e in ms))
        if not any(fr.by_name[n].op == "Merge" for n in inner):
            return pred, ms
    return None


def _rewrite_cond(fr: _Frames, group, count: int) -> tf.GraphDef:
    gd = fr.gd
    pred, merges = group
    then_nodes = set().union(*(t for _, _, _, t, _ in merges))
    else_nodes = set().union(*(e for _, _, _, _, e in merges))
    switches = sorted(n.name for n in gd.node if n.op == "Switch"
                      and [i for i in n.input if not i.startswith("^")][1:2] == [pred]
                      and [i for i in n.input if not i.startswith("^")][0] != pred)
    args = [f"a{k}" for k in range(len(switches))]
    tag = f"{merges[0][0].name.replace('/', '_')}_{count}"
    then = _function(fr, f"{tag}_then", args, [t for _, t, _, _, _ in merges],
                     {(sw, 1): a for sw, a in zip(switches, args)}, lambda s: s in then_nodes, "the branch without a Switch")
    els = _function(fr, f"{tag}_else", args, [e for _, _, e, _, _ in merges],
                    {(sw, 0): a for sw, a in zip(switches, args)}, lambda s: s in else_nodes, "the branch without a Switch")
    gd.library.function.extend([then, els])
    name = f"{tag}_if"
    node = tf.NodeDef(name=name, op="If")
    node.input.extend([pred] + [[i for i in fr.by_name[sw].input if not i.startswith("^")][0] for sw in switches])
    node.attr["then_branch"].func.name = then.signature.name
    node.attr["else_branch"].func.name = els.signature.name
    node.attr[V1_COND].b = True      # GE lowers a v1 cond with StreamSwitch, not labels (engines/labels.py)
    out_of = {m.name: k for k, (m, _, _, _, _) in enumerate(merges)}
    removed = then_nodes | else_nodes | set(switches) | set(out_of) | {
        n.name for n in gd.node if n.op == "Switch" and [i for i in n.input if not i.startswith("^")] == [pred, pred]}
    changed = True
    while changed:       # what only the removed nodes fed (the pivots, their NoOps) goes too
        changed = False
        for n in gd.node:
            if n.name in removed:
                continue
            srcs = [_ref(i)[0] for i in n.input]
            if srcs and all(x in removed and x not in out_of for x in srcs):
                removed.add(n.name)
                changed = True
    return _splice(fr, removed, node, out_of, set(out_of), "a cond without its Merge")
