"""The earlier results inside a fused op: a Conv2D whose epilogue holds the residual Add and/or the Relu
(passes/fusion.py: fused_add, fused_relu), an Add/AddN with its Relu, a MatMul with the bias Add the compiler
folded into it. A device cannot dump these; the simulator reruns the op's kernel with the shorter epilogue on
the inputs it was dumped with, so the framework tensors fusion hid are compared too.

Only epilogues the .om records are peeled (the attributes and the bias input of a matmul the framework added in
a separate node): a folded BatchNorm or scale cannot be undone, and the framework tensor before it stays
`fused`."""
from __future__ import annotations

from typing import Callable

import numpy as np

Stage = tuple[str, Callable[..., np.ndarray]]    # (label, its output: value(inputs=None) on other inputs too)
OWN_BIAS = {"Gemm"}                              # framework ops whose own output includes the bias
SEPARATE_BIAS = {"BiasAdd"}                      # a framework bias node after a convolution without one
SCALES = {"Mul", "BatchNormalization", "FusedBatchNorm", "FusedBatchNormV3"}   # folded into the filter: lost


def stages(op, kernels, load, framework_types: list[str]) -> list[Stage]:
    """The partial results of `op` (om_side.OmOp) in epilogue order, its full output excluded."""
    if op.name not in kernels.ops or not op.inputs:
        return []
    attrs = kernels.attrs(op.name)

    def run(label: str, changes: dict, drop: tuple[int, ...] = ()) -> Stage:
        def value(inputs: dict | None = None) -> np.ndarray:
            ins = inputs if inputs is not None else {k: load(e) for k, e in op.inputs.items()}
            new = {k: v for k, v in attrs.items() if k not in changes}
            new.update({k: v for k, v in changes.items() if v is not None})
            return kernels.run(op.name, ins, new, drop, _shapes(op))[0]
        return label, value

    if op.op_type == "Conv2D":
        out = []
        if 2 in op.inputs and SEPARATE_BIAS & set(framework_types) and not SCALES & set(framework_types):
            out.append(run("without its bias", {"fused_add": None, "fused_relu": None}, drop=(2, 3)))
        if attrs.get("fused_add") or attrs.get("fused_relu"):
            out.append(run("without its fused Add and Relu", {"fused_add": None, "fused_relu": None}, drop=(3,)))
        if attrs.get("fused_add") and attrs.get("fused_relu"):
            out.append(run("without its fused Relu", {"fused_relu": None}))
        return out
    if op.op_type in ("Add", "AddN") and attrs.get("fused_relu"):
        return [run("without its fused Relu", {"fused_relu": None})]
    if op.op_type in ("MatMulV2", "BatchMatMulV2") and 2 in op.inputs and len(framework_types) > 1 \
            and not OWN_BIAS & set(framework_types):
        return [run("without its fused bias", {}, drop=(2,))]
    return []


def asc_origins(kernels, op) -> list[tuple[str, int, str, tuple | None]]:
    """(IR node, output, trace key, permutation to the framework tensor or None) of a fused AscBackend /
    FusedAscBackend op (autofuse's _asc_origins)."""
    from atc_py.ir.graph import ASC_ORIGINS
    from atc_py.om.attrs import from_attr
    om_op = kernels.ops.get(op.name)
    if om_op is None or ASC_ORIGINS not in om_op.attr:
        return []
    out = []
    for entry in from_attr(om_op.attr[ASC_ORIGINS]) or []:
        parts = entry.split("\t") if isinstance(entry, str) else []
        if len(parts) not in (3, 4) or not parts[1].isdigit():
            continue
        perm = None
        if len(parts) == 4:
            p = [int(x) for x in parts[3].split(",") if x.isdigit()]
            perm = tuple(p) if sorted(p) == list(range(len(p))) else None
        out.append((parts[0], int(parts[1]), parts[2], perm))
    return out


class AscTrace:
    """The inner values of one fused AscBackend launch, computed once when first asked for: the kernel rerun on
    the op's dumped inputs with ascgraph_kernel.TRACE set. A FusedAscBackend launches its members in order;
    `graphs` (the members' graph names as the origins list them, in that order) says which launch is whose."""

    def __init__(self, op, kernels, load, graphs: list[str]):
        self.op, self.kernels, self.load = op, kernels, load
        self.launch = {g: k for k, g in enumerate(graphs)}
        self._values: list | None = None

    def run(self, inputs: dict | None = None) -> list:
        from atc_py.autofuse.ascgraph_kernel import TRACE
        ins = inputs if inputs is not None else {k: self.load(e) for k, e in self.op.inputs.items()}
        trace: list = []
        token = TRACE.set(trace)
        try:
            self.kernels.run(self.op.name, ins, out_shapes=_shapes(self.op))
        finally:
            TRACE.reset(token)
        return trace

    def value(self, key: str, inputs: dict | None = None) -> np.ndarray:
        """The value of AscIR node `<graph>/<node>`; KeyError when the launch did not trace it."""
        values = self.run(inputs) if inputs is not None else self._values
        if values is None:
            values = self._values = self.run()
        graph, node = key.rsplit("/", 1)
        k = self.launch.get(graph, -1)
        if not 0 <= k < len(values) or node not in values[k]:
            raise KeyError(key)
        return values[k][node]


def asc_output_sources(kernels, op) -> dict[int, str]:
    """A fused op's outputs: output index -> "<graph>/<AscIR node>" its Store writes. An AscBackend's from its
    HintGraph; a FusedAscBackend's output is a member's output, written by that member's Store (outputs of one
    size cannot be told apart otherwise: a residual sum and the LayerNorm of it)."""
    from atc_py.autofuse.fused import from_fused_def
    from atc_py.autofuse.graph import AscGraphError
    from atc_py.autofuse.serialize import from_graph_def
    from atc_py.om.attrs import from_attr
    om_op = kernels.ops.get(op.name)
    if om_op is None:
        return {}
    try:
        if om_op.type == "AscBackend" and "ascgraph" in om_op.attr:
            return _stored(from_graph_def(from_attr(om_op.attr["ascgraph"])))
        if om_op.type == "FusedAscBackend" and "fused_graph" in om_op.attr:
            fg = from_fused_def(from_attr(om_op.attr["fused_graph"]))
            members = [_stored(m.hint) for m in fg.members]
            return {k: members[j][i] for k, (j, i) in enumerate(fg.outputs) if i in members[j]}
    except (AscGraphError, AttributeError, TypeError, ValueError, IndexError):
        return {}
    return {}


def _stored(hint) -> dict[int, str]:
    """A HintGraph's outputs: index -> "<graph>/<AscIR node>" its Store writes."""
    out = {}
    for node in hint.output_nodes:
        store = node.inputs[0][0] if node.inputs else None
        src = store.inputs[0][0] if store is not None and store.inputs else None
        k = node.attrs.get("index")
        if src is not None and isinstance(k, int):
            out[k] = f"{hint.name}/{src.name}"
    return out


def _shapes(op) -> list:
    """The op's output shapes as it ran (its dumps, in the framework's layout)."""
    return [tuple(e.get("origin_shape") or e["shape"]) for _, e in sorted(op.outputs.items())]
