"""Auto tiling: one symbolic AscGraph, tiled for many shapes within the SoC's UB and cores; the TilingData
layout comes from the graph's symbols; the kernel runs every shape from its tiling data."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.autofuse.ascgraph_kernel import kernel_for
from atc_py.autofuse.schedule import DOUBLE, SINGLE, SPILL
from atc_py.autofuse.tiling import footprint
from atc_py.ops.core.base import OpError
from atc_py.platform import load_soc

RNG = np.random.default_rng(7)


def softmax_kernel():
    """Div by a scalar then Softmax over the last axis, compiled once at [2, 3, 16]."""
    g = helper.make_graph([helper.make_node("Div", ["x", "t"], ["s"]), helper.make_node("Softmax", ["s"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.asarray(2.0, np.float32), "t")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    r = atc_py.build(m, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"})
    (node,) = [n for n in r.graph.nodes if n.op_type == "AscBackend"]
    return kernel_for(node.attrs["ascgraph"], node.attrs["ascgraph_impl"])


def reference(x):
    s = x / np.float32(2.0)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


SHAPES = [(1, 1, 1), (2, 3, 16), (5, 7, 33), (1, 1000, 8), (64, 48, 128), (3, 1, 4000), (1, 2, 9000), (1, 1, 30000)]


def row_fitting(k, key, ub_size) -> int:
    """The longest row one tile of `key` holds in UB."""
    lo, hi = 1, 1 << 20
    while lo < hi:
        mid = (lo + hi + 1) // 2
        env = {"s0": 1, "s1": 1, "s2": mid, "z0z1t_size": 1, "z0z1Tb_size": 1}
        lo, hi = (mid, hi) if footprint(k.impls[key], env)[0] <= ub_size else (lo, mid - 1)
    return lo


@pytest.mark.parametrize("soc_name", ["Ascend910B1", "Ascend310P3"])
def test_one_graph_tiles_every_shape_within_ub_and_cores(soc_name):
    k = softmax_kernel()
    soc = load_soc(soc_name)
    assert k.struct.names == ("s0", "s1", "s2", "z0z1t_size", "z0z1Tb_size")   # size vars, then tiling vars
    double, single = row_fitting(k, DOUBLE, soc.ub_size), row_fitting(k, SINGLE, soc.ub_size)
    assert double < single
    keys = set()
    for shape in SHAPES + [(2, 3, double), (2, 3, double + 1), (1, 2, single), (1, 2, single + 1)]:
        plan = k.plan([shape], soc)
        keys.add(plan.key)
        rows, row = shape[0] * shape[1], shape[2]
        tile, per_block = plan.values["z0z1t_size"], plan.values["z0z1Tb_size"]
        tiles = -(-rows // tile)
        assert 1 <= plan.block_dim <= soc.vector_cores
        assert (plan.block_dim - 1) * per_block < tiles <= plan.block_dim * per_block   # every tile, once
        ub, ws = footprint(k.impls[plan.key], plan.values)
        if plan.key != SPILL:
            assert ub == plan.ub_bytes <= soc.ub_size, (shape, plan)
        else:
            assert plan.workspace == [ws * plan.block_dim] and ws >= row * 4
        data = k.tiling_values(plan)
        assert len(data) == 8 * 5 and k.struct.unpack(data)["s2"] == row
        x = RNG.standard_normal(shape).astype(np.float32)
        (y,) = k.run(k.struct.unpack(data), plan.key, plan.block_dim, [x])
        np.testing.assert_allclose(y, reference(x), rtol=1e-6, atol=1e-7)
    assert keys == {DOUBLE, SINGLE, SPILL}      # the long rows fall back to single buffers, then to workspace


def test_tiles_use_the_cores_and_stay_aligned():
    k = softmax_kernel()
    soc = load_soc("Ascend910B1")
    plan = k.plan([(64, 48, 128)], soc)       # 3072 rows: 64 per core, two tiles of 32 (64 do not fit UB)
    assert plan.block_dim == soc.vector_cores and plan.key == DOUBLE
    assert (plan.values["z0z1t_size"], plan.values["z0z1Tb_size"]) == (32, 2)
    plan = k.plan([(1, 1, 16)], soc)
    assert plan.block_dim == 1 and plan.values["z0z1t_size"] == 1


def test_the_kernel_runs_from_its_tiling_data_not_from_the_shapes():
    k = softmax_kernel()
    soc = load_soc("Ascend910B1")
    plan = k.plan([(4, 5, 16)], soc)
    stale = k.struct.unpack(k.tiling_values(k.plan([(4, 5, 32)], soc)))
    with pytest.raises(OpError, match="tiling data says s2 = 32"):
        k.run(stale, plan.key, plan.block_dim, [np.zeros((4, 5, 16), np.float32)])
    with pytest.raises(OpError, match="does not cover"):
        k.run(k.struct.unpack(k.tiling_values(plan)), plan.key, plan.block_dim + 5, [np.zeros((4, 5, 16), np.float32)])


def test_shapes_the_graph_does_not_allow_are_errors():
    k = softmax_kernel()
    with pytest.raises(OpError, match="rank"):
        k.plan([(4, 16)], load_soc("Ascend910B1"))
    with pytest.raises(OpError, match="out of range|limit"):
        k.plan([(1 << 20, 1 << 20, 1 << 10)], load_soc("Ascend910B1"))


def test_ub_footprint_counts_double_buffers():
    k = softmax_kernel()
    env = {"s0": 2, "s1": 3, "s2": 64, "z0z1t_size": 4, "z0z1Tb_size": 1}
    double, _ = footprint(k.impls[DOUBLE], env)
    single, _ = footprint(k.impls[SINGLE], env)
    queues = sum(n.y.mem.size.eval(env) for n in k.impls[DOUBLE].nodes
                 if n.y.mem is not None and n.y.mem.alloc_type == "Queue")
    assert double - single == queues > 0


def test_the_cost_counts_a_broadcast_input_by_the_rows_it_reads():
    """A per-channel bias on [1, 16, 32, 32]: each tile reads a few channels of it, not a gathered copy the
    size of x; the work is vector ops per element, x in and y out, and the bias (autofuse/ascgraph_kernel.py)."""
    from atc_py.ops import get_op
    from atc_py.ops.core.execute import tiling_context
    x = np.zeros((1, 16, 32, 32), np.float32)
    g = helper.make_graph([helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Sigmoid", ["a"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.ones((1, 16, 1, 1), np.float32), "b")])
    r = atc_py.build(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
                     {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"})
    (node,) = [n for n in r.graph.nodes if n.op_type == "AscBackend"]
    spec = get_op("AscBackend")
    ctx = tiling_context(spec, [v.desc for v in node.inputs], [v.desc for v in node.outputs], node.attrs,
                         load_soc("Ascend910B1"))
    w = spec.work(ctx)
    assert 2 * x.nbytes < w.bytes < 2 * x.nbytes + 4 * 16 * 48 * 4      # a few channels per tile, 48 tiles
    assert w.vector_ops >= x.size * (1 + 1 + 4) and w.pipelined       # broadcast, add, sigmoid per element
    blk = spec.block_work(ctx, 48)
    assert blk.bytes * 48 >= w.bytes - 4 * 16 * 48 and blk.bytes < w.bytes
