"""TensorFlow v1 control flow -> functional While (GE's TF parser does the same before building the graph).

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

from ...errors import AtcError
from ...proto import tf_graph_pb2 as tf

MAX_FRAMES = 4096


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
    """A GraphDef without Enter/Exit/Merge/Switch/NextIteration/LoopCond loops (unchanged if it has none)."""
    if not any(n.op in ("Enter", "NextIteration", "LoopCond") for n in gd.node):
        return gd
    gd = tf.GraphDef.FromString(gd.SerializeToString())
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

    def body_fn(fname: str, outputs: list[str], arg_of: dict[tuple[str, int], str]) -> tf.FunctionDef:
        """The nodes `outputs` need, back to the args; refs in function form."""
        def arg_for(src: str, k: int) -> str | None:
            if (src, k) in arg_of:
                return arg_of[(src, k)]
            node = fr.by_name.get(src)
            return arg_of.get((src, 0)) if node is not None and node.op == "Enter" else None

        fn = tf.FunctionDef()
        fn.signature.name = fname
        for a in args:
            fn.signature.input_arg.add(name=a)
        need, q, seen = [], deque(_ref(o)[0] for o in outputs), set()
        while q:
            n = q.popleft()
            if n in seen:
                continue
            seen.add(n)
            node = fr.by_name.get(n)
            if node is None:
                raise fr.fail(n, "is read inside the loop but not in the graph")
            need.append(node)
            for i in node.input:
                src, k, ctrl = _ref(i)
                if ctrl or arg_for(src, k) is not None:
                    continue
                if src not in names and fr.by_name.get(src, tf.NodeDef()).op != "Const":
                    raise fr.fail(node.name, f"reads {src}, which enters the loop without an Enter")
                q.append(src)
        for node in need:
            c = fn.node_def.add()
            c.CopyFrom(node)
            del c.input[:]
            for i in node.input:
                src, k, ctrl = _ref(i)
                if ctrl:
                    continue
                c.input.append(arg_for(src, k) or f"{src}:output:{k}")
        for k, o in enumerate(outputs):
            fn.signature.output_arg.add(name=f"out{k}")
            src, idx, _ = _ref(o)
            fn.ret[f"out{k}"] = arg_for(src, idx) or f"{src}:output:{idx}"
        return fn

    inv_arg = {(e.name, 0): f"inv{k}" for k, e in enumerate(invariants)}
    cond_args = {(m.name, 0): f"v{k}" for k, (_, m, _, _, _) in enumerate(vars_)} | inv_arg
    body_args = {(sw.name, 1): f"v{k}" for k, (_, _, sw, _, _) in enumerate(vars_)} | inv_arg
    pred = [i for i in loop_cond.input if not i.startswith("^")][0]
    cond = body_fn(f"{tag}_cond_{count}", [pred], cond_args)
    body = body_fn(f"{tag}_body_{count}", [[i for i in n.input if not i.startswith("^")][0]
                                           for _, _, _, n, _ in vars_], body_args)
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
    new = tf.GraphDef(library=gd.library, versions=gd.versions)
    placed = False
    for n in gd.node:
        if n.name in names:
            if not placed:
                new.node.add().CopyFrom(w)
                placed = True
            continue
        c = new.node.add()
        c.CopyFrom(n)
        del c.input[:]
        for i in n.input:
            src, k, ctrl = _ref(i)
            if src in out_of:
                c.input.append(f"^{wname}" if ctrl else f"{wname}:{out_of[src]}")
            elif src in names:
                if not ctrl:
                    raise fr.fail(n.name, f"reads {src} inside loop {frame!r} without an Exit")
            else:
                c.input.append(i)
    return new
