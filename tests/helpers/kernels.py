"""One op run the way the device runs it (a one-node graph: infer, tiling, kernel), for the operator tests."""
from __future__ import annotations

from atc_py.ir.graph import Graph, TensorDesc
from atc_py.ops import get_op
from atc_py.ops.core.execute import run_op
from atc_py.platform import load_soc

SOC = load_soc("Ascend910B1")


def run_one_op(op_type, inputs, attrs=None, soc=SOC):
    """Build a one-node graph, infer, then tiling + kernel."""
    g = Graph("t")
    vals = [None if x is None else g.add_node(f"in{i}", "Data", out_descs=[TensorDesc(x.shape, x.dtype.name)],
                                                attrs={"index": i}).outputs[0] for i, x in enumerate(inputs)]
    spec = get_op(op_type)
    node = g.add_node("n", op_type, vals, [TensorDesc((), "float32")] * len(spec.outputs), attrs or {})
    for v, d in zip(node.outputs, spec.infer(node)):
        v.desc = d
    outs = run_op(spec, [v.desc if v else None for v in vals], [v.desc for v in node.outputs], node.attrs, soc, inputs)
    return outs, node
