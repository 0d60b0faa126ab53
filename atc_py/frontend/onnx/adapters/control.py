"""If, Loop, Scan -> GE's If and While owning IR subgraphs (subgraph.py converts the bodies).

If: a condition known at import selects its branch right away (value-aware import; its nodes join the
graph); otherwise If(cond, captures...) with both branches, a sequence or optional output travelling as its
tensors (both branches must give the same structure: lengths and presence are fixed when compiling).
Loop(M, cond, v...) and Scan become While over [i, (M), cond, v..., captures...] (Scan: [i, states...,
scan inputs..., captures...]) whose cond subgraph computes `i < M and cond` and whose body increments the counter i in device memory. Scan outputs: with a trip
count known at compile time they are accumulators [T, ...] the body writes row i of (InplaceUpdate), so the
loop stays static; otherwise the While stacks them per iteration (`_scan_output_num`) and, its output
shapes being unknown, runs in the host executor. A Loop over sequences is unrolled at import (loop_unroll.py).
"""
from __future__ import annotations

import numpy as np

from ....ir.graph import Graph, TensorDesc, Value
from ....ops.control import SCAN_OUTPUTS, TRIP_COUNT
from ....ops.core.infer import infer_node
from ..adapter import AdapterError, NodeCtx, OnnxOp, onnx_op
from ..structured import leaves, mismatch, rebuild
from .loop_unroll import needs_unroll, unroll


def _sg():
    """subgraph.py builds on the converter, which imports the adapters: imported when first used."""
    from .. import subgraph
    return subgraph


def add_data(g, index, desc, name):
    return _sg().add_data(g, index, desc, name)


def finish(g, outputs, names):
    return _sg().finish(g, outputs, names)


def new_subgraph(parent, name):
    return _sg().new_subgraph(parent, name)


def BodyConverter(*args):   # noqa: N802  (the class, built lazily)
    return _sg().BodyConverter(*args)

MAX_SCAN_ACC_BYTES = 256 << 20   # a static scan accumulator beyond this stays dynamic (host executor)


def emit_control(conv, name: str, op_type: str, inputs: list, subgraphs: dict[str, Graph], n_out: int,
                 attrs: dict | None = None) -> list[Value]:
    """Add a control node owning `subgraphs` to the converter's graph and infer it (through its subgraphs)."""
    g = conv.graph
    node = g.add_node(g.unique_name(name), op_type, inputs, [TensorDesc((), "float32")] * n_out, attrs or {})
    node.subgraphs = dict(subgraphs)
    infer_node(node)
    return node.outputs


def _emit_in(conv, name: str, op_type: str, inputs: list, attrs: dict | None = None, n_out: int = 1) -> list[Value]:
    return conv.emit(conv.graph.unique_name(name), op_type, inputs, attrs or {}, n_out)


def _const(g: Graph, name: str, data) -> Value:
    return g.add_const(g.unique_name(name), np.asarray(data))


def _scalar(conv, name: str, v: Value) -> Value:
    """A one-element tensor as a scalar (ONNX allows [1] for trip counts and conditions)."""
    if v.desc.shape == ():
        return v
    if v.desc.known and v.desc.numel != 1:
        raise AdapterError(f"{name} must have one element, it has shape {list(v.desc.shape)}")
    return _emit_in(conv, f"{name}_scalar", "Reshape", [v, _const(conv.graph, f"{name}_shape", np.zeros(0, np.int64))])[0]


def _tensors(values, what: str) -> None:
    for v in values:
        if not isinstance(v, Value):
            raise AdapterError(f"{what} is a sequence or optional; only tensors can flow through control flow")


class _Body:
    """A subgraph being built: its Data slots and the converter of the ONNX body inside it."""

    def __init__(self, ctx: NodeCtx, suffix: str):
        self.ctx = ctx
        self.g = new_subgraph(ctx.conv, f"{ctx.name}_{suffix}")
        ctx.conv.graph._names.add(self.g.name)

    def data(self, index: int, desc: TensorDesc, name: str) -> Value:
        return add_data(self.g, index, desc, name)

    def convert(self, proto, bindings: dict[str, Value], capture_base: int) -> tuple[list, object]:
        conv = BodyConverter(self.ctx.conv, proto, self.g, bindings, capture_base)
        return conv.run(), conv


@onnx_op("If")
class If(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        known = ctx.const(0)
        if known is not None:   # the condition is known now: only its branch is imported
            branch = ctx.attr("then_branch" if bool(np.asarray(known).reshape(-1)[0]) else "else_branch")
            return _sg().BodyConverter.inline(ctx.conv, branch)
        cond = _scalar(ctx.conv, f"{ctx.name}_cond", ctx.input(0))
        branches, convs, outs, shapes = {}, [], [], []
        for key in ("then_branch", "else_branch"):
            b = _Body(ctx, key)
            values, conv = b.convert(ctx.attr(key), {}, 0)
            branches[key], convs = b, convs + [conv]
            shapes.append(values)
        if len(shapes[0]) != len(shapes[1]):
            raise AdapterError(f"then_branch gives {len(shapes[0])} outputs, else_branch gives {len(shapes[1])}")
        for k, (x, y) in enumerate(zip(*shapes)):     # sequences and optionals: their tensors are the outputs
            why = mismatch(x, y)
            if why:
                raise AdapterError(f"output {k} is {why} (the condition is known only at run time)")
        outs = [[t for v in values for t in leaves(v)] for values in shapes]
        union: list[Value] = []
        for conv in convs:          # one input per captured outer value, shared by both branches
            for v in conv.captured:
                if all(v is not u for u in union):
                    union.append(v)
        for (key, b), conv, values in zip(branches.items(), convs, outs):
            for d in b.g.data_nodes:
                d.attrs["index"] = next(k for k, u in enumerate(union) if u is conv.captured[d.attrs["index"]])
            finish(b.g, values, [f"output_{k}" for k in range(len(values))])
        res = emit_control(ctx.conv, ctx.name, "If", [cond] + union,
                           {k: b.g for k, b in branches.items()}, len(outs[0]))
        it = iter(res)
        return [rebuild(v, it) for v in shapes[0]]


def _cond_graph(ctx: NodeCtx, slots: list[TensorDesc], i_slot: int, m_slot: int | None, c_slot: int) -> Graph:
    """cond(i, M, cond, ...) = i < M and cond (no M: cond)."""
    b = _Body(ctx, "cond")
    i = b.data(i_slot, slots[i_slot], "i")
    c = b.data(c_slot, slots[c_slot], "cond")
    conv = BodyConverter(ctx.conv, ctx.attr("body"), b.g, {}, len(slots))
    if m_slot is None:
        out = _emit_in(conv, f"{b.g.name}_keep", "Identity", [c])[0]
    else:
        m = b.data(m_slot, slots[m_slot], "trip_count")
        lt = _emit_in(conv, f"{b.g.name}_less", "Less", [i, m])[0]
        out = _emit_in(conv, f"{b.g.name}_and", "LogicalAnd", [lt, c])[0]
    finish(b.g, [out], ["cond"])
    return b.g


def _accumulate(conv, g: Graph, i: Value, acc: Value, elem: Value, k: int) -> Value:
    """acc with row i replaced by elem (the iteration's scan output)."""
    idx = _emit_in(conv, f"{g.name}_row{k}", "Unsqueeze", [i], {"axes": [0]})[0]
    row = _emit_in(conv, f"{g.name}_elem{k}", "Unsqueeze", [elem], {"axes": [0]})[0]
    return _emit_in(conv, f"{g.name}_acc{k}", "InplaceUpdate", [acc, idx, row])[0]


def _scan_static(T: int, elems: list[Value]) -> bool:
    return T >= 0 and all(e.desc.known for e in elems) and \
        all(T * e.desc.nbytes <= MAX_SCAN_ACC_BYTES for e in elems)


LONG_LOOP_TRIPS = 1_000_000   # a constant trip count beyond this: warned at build time (om-run's task budget)


@onnx_op("Loop")
class Loop(OnnxOp):
    @classmethod
    def _impl_v1(cls, ctx: NodeCtx):
        proto = ctx.attr("body")
        m0, c0 = ctx.input(0), ctx.input(1)
        vs = [ctx.input(i) for i in range(2, ctx.n_inputs)]
        if m0 is None and c0 is None:
            raise AdapterError("it has neither a trip count nor a condition: an unbounded loop")
        if len(proto.input) == 2 + len(vs) and needs_unroll(ctx, proto, vs):
            return unroll(ctx, proto, vs)      # sequences: resolved at compile time, iteration by iteration
        _tensors(vs, "a loop-carried value")
        n_scan = len(proto.output) - 1 - len(vs)
        if len(proto.input) != 2 + len(vs) or n_scan < 0:
            raise AdapterError(f"its body takes {len(proto.input)} inputs and gives {len(proto.output)} outputs for "
                               f"{len(vs)} loop-carried values (it needs {2 + len(vs)} inputs and at least "
                               f"{1 + len(vs)} outputs)")
        g = ctx.conv.graph
        m_known = ctx.const(0)
        if m_known is not None and np.asarray(m_known).size == 1 and int(np.asarray(m_known).reshape(-1)[0]) > \
                LONG_LOOP_TRIPS:
            g.warnings.append(f"Loop {ctx.name} has a constant trip count of {int(np.asarray(m_known).reshape(-1)[0])}"
                              f"{' (its condition may end it sooner)' if c0 is not None else ''}: a simulation of it "
                              f"stops at om-run's task budget (--max-tasks) unless the loop ends early")
        trip = int(np.asarray(m_known).reshape(-1)[0]) if m_known is not None and c0 is None else -1
        trip = max(trip, 0) if trip != -1 else -1
        init = [_const(g, f"{ctx.name}_i0", np.array(0, np.int64))]
        i_slot, m_slot = 0, (1 if m0 is not None else None)
        if m0 is not None:
            init.append(_scalar(ctx.conv, f"{ctx.name}_trip_count", m0))
        c_slot = len(init)
        init.append(_scalar(ctx.conv, f"{ctx.name}_cond", c0) if c0 is not None else
                    _const(g, f"{ctx.name}_cond0", np.array(True)))
        v_base = len(init)
        init += vs
        slots = [v.desc for v in init]
        b = _Body(ctx, "body")
        data = [b.data(k, d, f"in{k}") for k, d in enumerate(slots)]
        bind = {proto.input[0].name: data[i_slot], proto.input[1].name: data[c_slot]}
        bind.update({proto.input[2 + k].name: data[v_base + k] for k in range(len(vs))})
        capture_base = len(slots)
        values, conv = b.convert(proto, bind, capture_base)
        _tensors(values, "a body output")
        cond_out = _scalar(conv, f"{b.g.name}_cond_out", values[0]) if c0 is not None else data[c_slot]
        one = _const(b.g, f"{b.g.name}_one", np.array(1, np.int64))
        i_next = _emit_in(conv, f"{b.g.name}_next_i", "Add", [data[i_slot], one])[0]
        outs = [i_next] + ([data[m_slot]] if m_slot is not None else []) + [cond_out] + values[1:1 + len(vs)]
        cap_data = {d.attrs["index"]: d.outputs[0] for d in b.g.data_nodes if d.attrs["index"] >= capture_base}
        outs += [cap_data[capture_base + k] for k in range(len(conv.captured))]
        carried_init = init + list(conv.captured)
        elems = values[1 + len(vs):]
        attrs = {}
        if elems and _scan_static(trip, elems):
            for k, e in enumerate(elems):
                acc0 = _const(g, f"{ctx.name}_scan{k}", np.zeros((trip,) + tuple(e.desc.shape), e.desc.dtype))
                acc = b.data(len(carried_init), acc0.desc, f"scan{k}")
                outs.append(_accumulate(conv, b.g, data[i_slot], acc, e, k))
                carried_init.append(acc0)
        elif elems:
            outs += elems
            attrs[SCAN_OUTPUTS] = len(elems)
        attrs[TRIP_COUNT] = trip
        finish(b.g, outs, [f"output_{k}" for k in range(len(outs))])
        cond = _cond_graph(ctx, [v.desc for v in carried_init], i_slot, m_slot, c_slot)
        res = emit_control(ctx.conv, ctx.name, "While", carried_init, {"cond": cond, "body": b.g},
                           len(outs), attrs)
        n_carried = len(carried_init) - (len(elems) if SCAN_OUTPUTS not in attrs else 0)
        scans = res[n_carried:] if elems else []
        return res[v_base:v_base + len(vs)] + scans


@onnx_op("Scan")
class Scan(OnnxOp):
    """Scan-8 (batch axis 0 of size 1, no sequence_lens) and Scan-9+ (axes and directions per input/output)."""

    @classmethod
    def _impl_v8(cls, ctx: NodeCtx):
        if ctx.input(0) is not None:
            raise AdapterError("sequence_lens is not supported")
        xs = [ctx.input(i) for i in range(1, ctx.n_inputs)]
        for x in xs:
            if not x.desc.known or not x.desc.shape or x.desc.shape[0] != 1:
                raise AdapterError("Scan-8 is supported with a batch of one")
        squeezed = [ctx.emit("Squeeze", [x], {"axes": [0]}, suffix=f"unbatch{k}")[0] for k, x in enumerate(xs)]
        n_scan = int(ctx.attr("num_scan_inputs"))
        dirs = list(ctx.attr("directions", [0] * n_scan))
        outs = cls._scan(ctx, squeezed, n_scan, [0] * n_scan, dirs, None, None)
        return [ctx.emit("Unsqueeze", [o], {"axes": [0]}, suffix=f"batch{k}")[0] for k, o in enumerate(outs)]

    @classmethod
    def _impl_v9(cls, ctx: NodeCtx):
        xs = [ctx.input(i) for i in range(ctx.n_inputs)]
        n_scan = int(ctx.attr("num_scan_inputs"))
        return cls._scan(ctx, xs, n_scan, list(ctx.attr("scan_input_axes", [0] * n_scan)),
                         list(ctx.attr("scan_input_directions", [0] * n_scan)),
                         ctx.attr("scan_output_axes"), ctx.attr("scan_output_directions"))

    @classmethod
    def _scan(cls, ctx: NodeCtx, xs: list[Value], n_scan: int, in_axes, in_dirs, out_axes, out_dirs) -> list[Value]:
        proto = ctx.attr("body")
        _tensors(xs, "a Scan input")
        n_state = len(xs) - n_scan
        if n_state < 0 or len(in_axes) != n_scan or len(in_dirs) != n_scan:
            raise AdapterError(f"num_scan_inputs {n_scan} does not fit its {len(xs)} inputs and attributes")
        states, scans = xs[:n_state], xs[n_state:]
        axes = []
        for k, (x, a) in enumerate(zip(scans, in_axes)):
            r = len(x.desc.shape)
            if not -r <= int(a) < r:
                raise AdapterError(f"scan_input_axes[{k}] = {a} is outside the rank {r} of scan input {k}")
            axes.append(int(a) % r)
        lengths = {x.desc.shape[a] for x, a in zip(scans, axes)}
        if not scans or len(lengths) != 1 or -1 in lengths:
            raise AdapterError(f"the scan inputs have different or unknown sequence lengths {sorted(lengths)}")
        T = lengths.pop()
        g = ctx.conv.graph
        init = [_const(g, f"{ctx.name}_i0", np.array(0, np.int64))] + states + scans
        slots = [v.desc for v in init]
        b = _Body(ctx, "body")
        data = [b.data(k, d, f"in{k}") for k, d in enumerate(slots)]
        i = data[0]
        conv = BodyConverter(ctx.conv, proto, b.g, {}, len(slots))
        last = _const(b.g, f"{b.g.name}_last", np.array(T - 1, np.int64))
        back = _emit_in(conv, f"{b.g.name}_back", "Sub", [last, i])[0] if any(in_dirs) or any(out_dirs or []) else None
        bind = {proto.input[k].name: data[1 + k] for k in range(n_state)}
        for k, (a, d) in enumerate(zip(axes, in_dirs)):
            row = _emit_in(conv, f"{b.g.name}_x{k}", "GatherV2D", [data[1 + n_state + k], back if d else i],
                           {"axis": a})[0]
            bind[proto.input[n_state + k].name] = row
        conv.values.update(bind)
        values = conv.run()
        _tensors(values, "a body output")
        if len(values) < n_state:
            raise AdapterError(f"its body gives {len(values)} outputs for {n_state} states")
        elems = values[n_state:]
        out_axes = list(out_axes) if out_axes is not None else [0] * len(elems)
        out_dirs = list(out_dirs) if out_dirs is not None else [0] * len(elems)
        if len(out_axes) != len(elems) or len(out_dirs) != len(elems):
            raise AdapterError("scan_output_axes / scan_output_directions do not match the scan outputs")
        one = _const(b.g, f"{b.g.name}_one", np.array(1, np.int64))
        outs = [_emit_in(conv, f"{b.g.name}_next_i", "Add", [i, one])[0]] + values[:n_state] + data[1 + n_state:]
        cap = {d.attrs["index"]: d.outputs[0] for d in b.g.data_nodes if d.attrs["index"] >= len(slots)}
        outs += [cap[len(slots) + k] for k in range(len(conv.captured))]
        carried = init + list(conv.captured)
        if not _scan_static(T, elems):
            raise AdapterError("its scan outputs have unknown shapes or are too big for a static loop")
        for k, (e, d) in enumerate(zip(elems, out_dirs)):
            acc0 = _const(g, f"{ctx.name}_scan{k}", np.zeros((T,) + tuple(e.desc.shape), e.desc.dtype))
            acc = b.data(len(carried), acc0.desc, f"scan{k}")
            outs.append(_accumulate(conv, b.g, back if d else i, acc, e, k))
            carried.append(acc0)
        finish(b.g, outs, [f"output_{k}" for k in range(len(outs))])
        cg = _Body(ctx, "cond")
        ci = cg.data(0, slots[0], "i")
        cconv = BodyConverter(ctx.conv, proto, cg.g, {}, len(carried))
        n = _const(cg.g, f"{cg.g.name}_T", np.array(T, np.int64))
        finish(cg.g, [_emit_in(cconv, f"{cg.g.name}_less", "Less", [ci, n])[0]], ["cond"])
        res = emit_control(ctx.conv, ctx.name, "While", carried, {"cond": cg.g, "body": b.g}, len(outs),
                           {TRIP_COUNT: T})
        results = list(res[1:1 + n_state])
        for k, (acc, a) in enumerate(zip(res[len(carried) - len(elems):], out_axes)):
            r = len(acc.desc.shape)
            if not -r <= int(a) < r:
                raise AdapterError(f"scan_output_axes[{k}] = {a} is outside the rank {r} of scan output {k}")
            a = int(a) % r
            if a:
                perm = list(range(1, a + 1)) + [0] + list(range(a + 1, r))
                acc = ctx.emit("TransposeD", [acc], {"perm": perm}, suffix=f"out{k}")[0]
            results.append(acc)
        return results
