"""Recurrent layers with ONNX's semantics under CANN's op types: CommonLSTM (peepholes, input_forget), CommonGRU
(linear_before_reset) and CommonRNN (the vanilla cell; CANN's parser has no ONNX RNN, the name follows its two
siblings). Time-major x [seq, batch, input]; forward, reverse or bidirectional; per-batch sequence_lens (steps
past a sequence's length give 0 in y and leave its state alone; reverse runs over each sequence's own steps);
initial states; clip; the ONNX activation functions with their alpha / beta. Outputs y [seq, dirs, batch,
hidden], y_h (and y_c) [dirs, batch, hidden]. Each step is two GEMMs (cube) and the gate math (vector): a MIX
kernel; tiling splits the batch over the cores."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorDesc
from .core.base import MIX, REQUIRED, KernelArgs, OpError, TilingContext, Work, ceil_div
from .core.registry import register
from .core.row_split import RowSplitOp


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


ACTIVATIONS = {
    "relu": lambda x, a, b: np.maximum(x, 0.0),
    "tanh": lambda x, a, b: np.tanh(x),
    "sigmoid": lambda x, a, b: _sigmoid(x),
    "affine": lambda x, a, b: a * x + b,
    "leakyrelu": lambda x, a, b: np.where(x >= 0, x, a * x),
    "thresholdedrelu": lambda x, a, b: np.where(x > a, x, 0.0),
    "scaledtanh": lambda x, a, b: a * np.tanh(b * x),
    "hardsigmoid": lambda x, a, b: np.clip(a * x + b, 0.0, 1.0),
    "elu": lambda x, a, b: np.where(x >= 0, x, a * (np.exp(x) - 1.0)),
    "softsign": lambda x, a, b: x / (1.0 + np.abs(x)),
    "softplus": lambda x, a, b: np.log1p(np.exp(x)),
}
# ONNX's defaults for alpha / beta when activation_alpha / activation_beta do not give them
DEFAULT_ALPHA = {"leakyrelu": 0.01, "thresholdedrelu": 1.0, "elu": 1.0, "hardsigmoid": 0.2, "scaledtanh": 1.0,
                 "affine": 1.0}
DEFAULT_BETA = {"hardsigmoid": 0.5, "scaledtanh": 1.0, "affine": 0.0}
DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}


class RecurrentBase(RowSplitOp):
    gates = 1                       # gate blocks in W / R (LSTM 4: i o f c, GRU 3: z r h, RNN 1)
    default_acts: tuple[str, ...] = ("tanh",)
    n_states = 1
    core_type = MIX
    attrs = {"hidden_size": REQUIRED, "direction": "forward", "activations": [], "activation_alpha": [],
             "activation_beta": [], "clip": -1.0}

    def _dims(self, node_or_attrs, x, w, r):
        h = int(self.attr(node_or_attrs, "hidden_size"))
        direction = self.attr(node_or_attrs, "direction")
        if direction not in DIRECTIONS:
            raise OpError(f"direction '{direction}' is not forward, reverse or bidirectional")
        d = DIRECTIONS[direction]
        if len(x) != 3 or h < 1:
            raise OpError(f"x must be [seq, batch, input] and hidden_size >= 1, got {list(x)} and {h}")
        g = self.gates * h
        if tuple(w) != (d, g, x[2]) or tuple(r) != (d, g, h):
            raise OpError(f"W {list(w)} / R {list(r)} must be [{d}, {g}, {x[2]}] / [{d}, {g}, {h}]")
        return x[0], x[1], x[2], h, d

    def _acts(self, attrs, d: int):
        names = [str(a).lower() for a in (self.attr(attrs, "activations") or [])] or list(self.default_acts) * d
        if len(names) != len(self.default_acts) * d:
            raise OpError(f"activations {names} must name {len(self.default_acts) * d} functions")
        unknown = [n for n in names if n not in ACTIVATIONS]
        if unknown:
            raise OpError(f"activation {unknown[0]} is not one of {', '.join(ACTIVATIONS)}")
        alpha, beta = list(self.attr(attrs, "activation_alpha") or []), list(self.attr(attrs, "activation_beta") or [])
        out, ka, kb = [], 0, 0
        for n in names:   # alpha / beta are consumed in order by the functions that take them
            a = b = 0.0
            if n in DEFAULT_ALPHA:
                a = float(alpha[ka]) if ka < len(alpha) else DEFAULT_ALPHA[n]
                ka += 1
            if n in DEFAULT_BETA:
                b = float(beta[kb]) if kb < len(beta) else DEFAULT_BETA[n]
                kb += 1
            out.append(lambda v, f=ACTIVATIONS[n], a=a, b=b: f(v, a, b))
        k = len(self.default_acts)
        return [out[i * k:(i + 1) * k] for i in range(d)]

    def infer(self, node: Node) -> list[TensorDesc]:
        x, w, r = (node.input_desc(i) for i in range(3))
        s, b, _, h, d = self._dims(node, x.shape, w.shape, r.shape)
        self._acts(node.attrs, d)
        checks = {3: (d, 2 * self.gates * h), 4: (b,), 5: (d, b, h), 6: (d, b, h), 7: (d, 3 * h)}
        for i, want in checks.items():
            if i < len(node.inputs) and node.inputs[i] is not None and i < len(self.inputs):
                got = node.input_desc(i).shape
                if tuple(got) != want:
                    raise OpError(f"input {self.inputs[i].rstrip('?')} {list(got)} must be {list(want)}")
        dt = x.dtype
        return [TensorDesc((s, d, b, h), dt, "ND", "ND")] + [TensorDesc((d, b, h), dt, "ND", "ND")] * self.n_states

    def rows(self, ctx: TilingContext) -> int:
        return int(ctx.inputs[0].shape[1])

    def cell(self, xw, h_prev, states, r, bias_r, p, acts, clip, attrs):
        """One step: xw = x_t @ W^T + Wb for the batch; returns the new (h, *other states)."""
        raise NotImplementedError

    def compute(self, args: KernelArgs, inputs):
        x = inputs[0]
        get = lambda i: inputs[i] if i < len(inputs) else None  # noqa: E731
        s, batch, _, h, d = self._dims(args.attrs, x.shape, inputs[1].shape, inputs[2].shape)
        acts = self._acts(args.attrs, d)
        clip = float(self.attr(args.attrs, "clip"))
        end = self.covered_rows(args)
        f64 = np.float64
        xs = x[:, :end].astype(f64)
        lens = np.full(end, s, np.int64) if get(4) is None else get(4).astype(np.int64)[:end]
        if np.any((lens < 0) | (lens > s)):
            raise OpError(f"sequence_lens {lens.tolist()} must lie in [0, {s}]")
        y = np.zeros((s, d, batch, h), f64)
        finals = [np.zeros((d, batch, h), f64) for _ in range(self.n_states)]
        g = self.gates * h
        for k in range(d):
            w, r = inputs[1][k].astype(f64), inputs[2][k].astype(f64)
            bias = get(3)[k].astype(f64) if get(3) is not None else np.zeros(2 * g)
            p = get(7)[k].astype(f64) if len(inputs) > 7 and get(7) is not None else None
            states = [np.zeros((end, h), f64) if get(5 + j) is None else get(5 + j)[k, :end].astype(f64)
                      for j in range(self.n_states)]
            reverse = self.attr(args.attrs, "direction") == "reverse" or k == 1
            xw = np.einsum("sbi,gi->sbg", xs, w) + bias[:g]
            for step in range(s):
                live = step < lens                                        # (batch,)
                t = np.where(reverse, lens - 1 - step, step)              # each sequence's own time index
                t_safe = np.clip(t, 0, s - 1)
                new = self.cell(xw[t_safe, np.arange(end)], states[0], states[1:], r, bias[g:], p, acts[k], clip,
                                args.attrs)
                states = [np.where(live[:, None], n, o) for n, o in zip(new, states)]
                y[t_safe[live], k, np.arange(end)[live]] = states[0][live]
            for j in range(self.n_states):
                finals[j][k, :end] = states[j]
        dt = args.outputs[0].dtype
        return [y.astype(dt)] + [f.astype(dt) for f in finals]

    def work(self, ctx: TilingContext) -> Work:
        x = ctx.inputs[0]
        s, b, i = x.shape
        h, g = ctx.inputs[2].shape[2], ctx.inputs[2].shape[1]
        d = ctx.inputs[1].shape[0]
        fm, fk, fn = ctx.soc.mkn_for(x.dtype)
        fractals = d * s * ceil_div(b, fm) * (ceil_div(i, fk) + ceil_div(h, fk)) * ceil_div(g, fn)
        moved = sum(v.nbytes for v in ctx.inputs if v is not None) + sum(v.nbytes for v in ctx.outputs)
        return Work(fractals=fractals, vector_ops=d * s * b * g * 4, bytes=moved, dtype=x.dtype)


@register
class CommonLSTM(RecurrentBase):
    op_type = "CommonLSTM"
    inputs = ("x", "w", "r", "b?", "sequence_lens?", "initial_h?", "initial_c?", "p?")
    outputs = ("y", "y_h", "y_c")
    attrs = {**RecurrentBase.attrs, "input_forget": 0}
    dtypes = ("float32", "float16", "float64", "int32", "int64")
    gates = 4
    default_acts = ("sigmoid", "tanh", "tanh")
    n_states = 2

    def cell(self, xw, h_prev, states, r, bias_r, p, acts, clip, attrs):
        c_prev = states[0]
        f, g, hact = acts
        n = h_prev.shape[1]
        z = xw + h_prev @ r.T + bias_r
        zi, zo, zf, zc = (z[:, k * n:(k + 1) * n] for k in range(4))
        pi, po, pf = (np.zeros(n),) * 3 if p is None else (p[:n], p[n:2 * n], p[2 * n:])

        def cl(v):   # clip bounds each gate's whole input, peephole term included (as onnxruntime does)
            return np.clip(v, -clip, clip) if clip > 0 else v
        i = f(cl(zi + pi * c_prev))
        ft = 1.0 - i if int(self.attr(attrs, "input_forget")) else f(cl(zf + pf * c_prev))
        c = ft * c_prev + i * g(cl(zc))
        o = f(cl(zo + po * c))
        return [o * hact(c), c]


@register
class CommonGRU(RecurrentBase):
    op_type = "CommonGRU"
    inputs = ("x", "w", "r", "b?", "sequence_lens?", "initial_h?")
    outputs = ("y", "y_h")
    attrs = {**RecurrentBase.attrs, "linear_before_reset": 0}
    dtypes = ("float32", "float16", "float64", "int32", "int64")
    gates = 3
    default_acts = ("sigmoid", "tanh")

    def cell(self, xw, h_prev, states, r, bias_r, p, acts, clip, attrs):
        f, g = acts
        n = h_prev.shape[1]
        rz, rr, rh = r[:n], r[n:2 * n], r[2 * n:]
        bz, br, bh = bias_r[:n], bias_r[n:2 * n], bias_r[2 * n:]
        xz, xr, xh = xw[:, :n], xw[:, n:2 * n], xw[:, 2 * n:]

        def c(v):
            return np.clip(v, -clip, clip) if clip > 0 else v
        zt = f(c(xz + h_prev @ rz.T + bz))
        rt = f(c(xr + h_prev @ rr.T + br))
        if int(self.attr(attrs, "linear_before_reset")):
            ht = g(c(xh + rt * (h_prev @ rh.T + bh)))
        else:
            ht = g(c(xh + (rt * h_prev) @ rh.T + bh))
        return [(1.0 - zt) * ht + zt * h_prev]


@register
class CommonRNN(RecurrentBase):
    op_type = "CommonRNN"
    inputs = ("x", "w", "r", "b?", "sequence_lens?", "initial_h?")
    outputs = ("y", "y_h")
    dtypes = ("float32", "float16", "float64", "int32", "int64")
    gates = 1
    default_acts = ("tanh",)

    def cell(self, xw, h_prev, states, r, bias_r, p, acts, clip, attrs):
        z = xw + h_prev @ r.T + bias_r
        return [acts[0](np.clip(z, -clip, clip) if clip > 0 else z)]
