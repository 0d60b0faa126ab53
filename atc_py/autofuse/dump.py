"""A readable dump of an AscGraph as the seed draws it: the size variables and axes, then every node inside the
loops of its sched.axis (`for z0 in range(s0):` ...), with its attributes and each output's dtype, axes,
repeats and strides; in an ImplGraph also the vectorized axes (one instruction covers them, so they are
shown on the node, not as loops) and where the tensor lives (GM, or a UB queue/buffer with its size).
Data and Output, the graph's contract with the outside, are listed before and after the loops."""
from __future__ import annotations

from . import ascir
from .graph import IMPL, AscGraph, AscNode, TensorAttr


def _list(xs) -> str:
    return ", ".join(str(x) for x in xs)


def _repeat(g: AscGraph, a: int, r) -> str:
    """A repeat that is its axis's whole (compound) size reads as `axis.size`."""
    size = g.axes[a].size
    return f"{g.axes[a].name}.size" if r == size and "(" in str(size) else str(r)


def _tensor(g: AscGraph, t: TensorAttr) -> str:
    names = [g.axes[a].name for a in t.axis]
    reps = [_repeat(g, a, r) for a, r in zip(t.axis, t.repeats)]
    text = f"{t.dtype} axis[{_list(names)}] repeats({_list(reps)}) strides({_list(t.strides)})"
    if t.vectorized_axis:
        vec = [f"{g.axes[a].name}:{s}" for a, s in zip(t.vectorized_axis, t.vectorized_strides)]
        text += f" vectorized{{{_list(vec)}}}"
    m = t.mem
    if g.type == IMPL and m is not None and m.size != 0:
        if m.alloc_type == "Queue":
            text += f" {m.hardware}[que {m.que_id}, depth {m.que_depth}, buf_num {m.buf_num}, {m.position}, {m.size} B]"
        elif m.alloc_type == "Buffer":
            text += f" {m.hardware}[buf {m.buf_id}, {m.position}, {m.size} B]"
        else:
            text += f" {m.hardware}[workspace, {m.size} B]"
    return text


def _node(g: AscGraph, n: AscNode) -> str:
    args = [src.name if k == 0 else f"{src.name}:{k}" for src, k in n.inputs]
    args += [f"{k}={v}" for k, v in sorted(n.attrs.items())]
    return f"{n.name} = {n.type}({_list(args)}) -> {_tensor(g, n.y)}"


def _loops(g: AscGraph, n: AscNode) -> list[int]:
    """The axes a node loops over: its sched.axis, minus (in an ImplGraph) the vectorized ones."""
    vec = set(n.y.vectorized_axis) if n.outputs else set()
    if n.type == "Store" and n.inputs:
        vec = set(n.input_attr(0).vectorized_axis)
    return [a for a in n.sched_axis if a not in vec]


def dump(g: AscGraph) -> str:
    lines = [f"AscGraph {g.name} ({g.type})", f"  sizes: {_list(g.size_vars)}", "  axes :"]
    lines += [f"    {a.name}({a.id}) {a.type} size {a.size}" +
              (f" from {{{_list(g.axes[f].name for f in a.from_)}}}" if a.from_ else "") for a in g.axes]
    if g.attrs:
        lines.append("  attrs: " + _list(f"{k}={v}" for k, v in sorted(g.attrs.items())))
    io = (ascir.DATA, ascir.OUTPUT)
    for n in g.nodes:
        if n.ir.kind == ascir.DATA:
            lines.append(f"  {_node(g, n)}")
    stack: list[int] = []
    for n in g.nodes:
        if n.ir.kind in io:
            continue
        loops = _loops(g, n)
        common = 0
        while common < min(len(stack), len(loops)) and stack[common] == loops[common]:
            common += 1
        del stack[common:]
        for a in loops[common:]:
            ax = g.axes[a]
            kind = {"BLOCK_OUT": "  # cores", "BLOCK_IN": "  # tiles of a core"}.get(ax.type, "")
            lines.append(f"  {'  ' * len(stack)}for {ax.name} in range({ax.size}):{kind}")
            stack.append(a)
        lines.append(f"  {'  ' * len(stack)}{_node(g, n)}")
    for n in g.nodes:
        if n.ir.kind == ascir.OUTPUT:
            lines.append(f"  {_node(g, n)}")
    return "\n".join(lines) + "\n"
