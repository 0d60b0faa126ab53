"""Value-aware import: values are worked out while the graph is built, so a model with
static inputs carries no -1 dim into an op, and a parameter that truly depends on input data makes its node
value-dependent (dynamic partition) instead of an error."""
from __future__ import annotations

from functools import partial

import numpy as np
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import atc_py
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers.onnx_builders import onnx_model

ORIGIN = {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"}


model = partial(onnx_model, opset=17, ir_version=8)


def run_both(tmp_path, m, feeds: dict, **options):
    res = atc_py.build(m, {**ORIGIN, **options})
    p = tmp_path / "m.om"
    p.write_bytes(res.om)
    outs, _ = Simulation(load_model(str(p))).run(list(feeds.values()))
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for got, want in zip(outs, ref):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    return res


def test_a_shape_chain_feeding_reshape_is_static(tmp_path):
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters write `x.view(x.size(0), -1)`."""
    i0 = numpy_helper.from_array(np.array(0, np.int64), "i0")
    ax = numpy_helper.from_array(np.array([0], np.int64), "ax")
    m1 = numpy_helper.from_array(np.array([-1], np.int64), "m1")
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i0"], ["n"]),
             helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]), helper.make_node("Concat", ["n1", "m1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    m = model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3, 4])],
              [helper.make_tensor_value_info("y", TP.FLOAT, None)], [i0, ax, m1])
    res = run_both(tmp_path, m, {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4)})
    assert res.summary["values_at_import"] == 4 and res.summary["unknown_subgraphs"] == 0
    assert all(min(v.desc.shape, default=0) >= 0 for n in res.graph.nodes for v in n.outputs)


def test_reduce_axes_from_the_graph_run_in_the_dynamic_partition(tmp_path):
    m = model([helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
              [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3, 4]), helper.make_tensor_value_info("axes", TP.INT64, [1])],
              [helper.make_tensor_value_info("y", TP.FLOAT, None)], opset=18)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    res = run_both(tmp_path, m, {"x": x, "axes": np.array([1], np.int64)})
    assert res.summary["unknown_subgraphs"] == 1


def test_tensor_parameters_of_slice_tile_pad_topk_split_range(tmp_path):
    """Each parameter arrives as a graph input: the model converts and runs with onnxruntime's numbers."""
    I, F = TP.INT64, TP.FLOAT  # noqa: E741 -- the dtypes by their first letter
    vi = helper.make_tensor_value_info
    cases = [
        ([helper.make_node("Slice", ["x", "st", "en"], ["y"])], [vi("st", I, [1]), vi("en", I, [1])],
         {"st": np.array([1]), "en": np.array([3])}),
        ([helper.make_node("Tile", ["x", "r"], ["y"])], [vi("r", I, [2])], {"r": np.array([2, 1])}),
        ([helper.make_node("Pad", ["x", "p"], ["y"])], [vi("p", I, [4])], {"p": np.array([1, 0, 0, 2])}),
        ([helper.make_node("TopK", ["x", "k"], ["y", "i"])], [vi("k", I, [1])], {"k": np.array([2])}),
        ([helper.make_node("Split", ["x", "sp"], ["y", "z"], axis=1)], [vi("sp", I, [2])], {"sp": np.array([1, 3])}),
        ([helper.make_node("Unsqueeze", ["x", "a"], ["y"])], [vi("a", I, [1])], {"a": np.array([1])}),
    ]
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    for nodes, extra_inputs, feeds in cases:
        outs = [vi(o, I if o == "i" else F, None) for o in nodes[0].output]
        m = model(nodes, [vi("x", F, [3, 4])] + extra_inputs, outs)
        res = run_both(tmp_path, m, {"x": x, **{k: v.astype(np.int64) for k, v in feeds.items()}})
        assert res.summary["unknown_subgraphs"] >= 1, nodes[0].op_type
    rng = model([helper.make_node("Range", ["a", "b", "d"], ["y"])],
                [vi("a", F, []), vi("b", F, []), vi("d", F, [])], [vi("y", F, None)])
    run_both(tmp_path, rng, {"a": np.array(1.0, np.float32), "b": np.array(7.0, np.float32),
                             "d": np.array(1.5, np.float32)})
