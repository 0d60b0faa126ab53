"""The HCCL collectives' registrations (atc_py/ops/hccl.py): engine and task kind, shape inference per op, every
attribute and dtype check with its message, the one-rank kernel (what collective_math gives for one rank), the
bytes hccl_test would report (collective_bytes) and what a run without a group of ranks is told."""
from __future__ import annotations

import numpy as np
import pytest

from atc_py.ir.graph import Graph, Node, TensorDesc, Value
from atc_py.ops import get_op
from atc_py.ops import hccl as H
from atc_py.ops.core.base import HCCL, KernelArgs, OpError
from atc_py.ops.core.execute import tiling_context
from atc_py.platform import load_soc


def node(op_type: str, shapes=((4, 8),), dtype="float32", **attrs) -> Node:
    n = Node("n", op_type, attrs)
    n.inputs = [Value(f"x{k}", TensorDesc(tuple(s), dtype), None) for k, s in enumerate(shapes)]
    return n


def infer(op_type, shapes=((4, 8),), dtype="float32", **attrs):
    return get_op(op_type).infer(node(op_type, shapes, dtype, **attrs))


def test_every_collective_is_an_hccl_task_of_the_hccl_engine():
    for op_type in H.HCOM_OP_TYPES:
        spec = get_op(op_type)
        assert (spec.engine, spec.task_kind, spec.pure) == (HCCL, "hccl", False), op_type
    assert set(H.HCOM_OP_TYPES) == {"HcomAllReduce", "HcomAllGather", "HcomReduceScatter", "HcomBroadcast",
                                    "HcomAllToAll", "HcomSend", "HcomReceive"}


@pytest.mark.parametrize("op_type,attrs,shapes,want", [
    ("HcomAllReduce", {"reduction": "sum"}, [(4, 8)], [(4, 8)]),
    ("HcomAllGather", {"rank_size": 4}, [(3, 8)], [(12, 8)]),
    ("HcomAllGather", {"rank_size": 1, "rank_ids": [5, 2]}, [(3, 8)], None),      # rank_size 1 vs 2 ids: an error
    ("HcomAllGather", {"rank_size": 2, "rank_ids": [5, 2]}, [(3, 8)], [(6, 8)]),
    ("HcomReduceScatter", {"rank_size": 4, "reduction": "max"}, [(8, 3)], [(2, 3)]),
    ("HcomBroadcast", {"root_rank": 0}, [(2,), (3, 4)], [(2,), (3, 4)]),
    ("HcomAllToAll", {"rank_size": 2}, [(4, 8)], [(4, 8)]),
    ("HcomSend", {"sr_tag": 1, "dest_rank": 1}, [(4, 8)], []),
])
def test_shape_inference(op_type, attrs, shapes, want):
    if want is None:
        with pytest.raises(OpError, match="rank_size 1 does not match rank_ids, which names 2 ranks"):
            infer(op_type, shapes, **attrs)
        return
    assert [d.shape for d in infer(op_type, shapes, **attrs)] == want


def test_receive_takes_its_shape_and_dtype_from_its_attributes():
    out = get_op("HcomReceive").infer(Node("r", "HcomReceive", {"sr_tag": 0, "src_rank": 1, "shape": [2, 5],
                                                                "dtype": "float16"}))
    assert [(d.shape, d.dtype) for d in out] == [((2, 5), "float16")]


@pytest.mark.parametrize("op_type,attrs,dtype,message", [
    ("HcomAllReduce", {"reduction": "avg"}, "float32", "reduction 'avg' is not one of sum, prod, max, min"),
    ("HcomAllReduce", {}, "float32", "required attribute 'reduction' of HcomAllReduce is missing"),
    ("HcomAllReduce", {"reduction": "prod"}, "int16", "reduction 'prod' does not take int16"),
    ("HcomAllReduce", {"reduction": "prod"}, "bfloat16", "reduction 'prod' does not take bfloat16"),
    ("HcomAllReduce", {"reduction": "sum"}, "uint8", "input 0 is uint8; HCCL's HcomAllReduce takes int8"),
    ("HcomAllGather", {"rank_size": 2}, "bool", "input 0 is bool"),
    ("HcomAllReduce", {"reduction": "sum", "rank_ids": [0, 3, 0]}, "float32", "rank_ids names rank 0 twice"),
    ("HcomAllReduce", {"reduction": "sum", "rank_ids": [1, -2]}, "float32", "rank_ids names rank -2"),
    ("HcomAllReduce", {"reduction": "sum", "rank_ids": "0,1"}, "float32", "rank_ids must be a list of integers"),
    ("HcomAllReduce", {"reduction": "sum", "group": ""}, "float32", "group must be a non-empty string"),
    ("HcomAllReduce", {"reduction": "sum", "group": "g" * 129}, "float32", "GE limits a group name to 128"),
    ("HcomAllReduce", {"reduction": "sum", "rank_size": -1}, "float32", "rank_size must be >= 0"),
    ("HcomAllReduce", {"reduction": "sum", "fusion": 3}, "float32", "fusion must be one of 0, 1, 2"),
    ("HcomAllReduce", {"reduction": "sum", "fusion_id": "a"}, "float32", "fusion_id must be an integer"),
    ("HcomAllGather", {}, "float32", "required attribute 'rank_size' of HcomAllGather is missing"),
    ("HcomAllGather", {"rank_size": 0}, "float32", "AllGather needs the group's size"),
    ("HcomReduceScatter", {"rank_size": 3, "reduction": "sum"}, "float32",
     r"first dimension 4 of \[4, 8\] does not split into rank_size 3"),
    ("HcomAllToAll", {"rank_size": 3}, "float32", "does not split into 3 ranks"),
    ("HcomBroadcast", {"root_rank": 2, "rank_size": 2}, "float32", "root_rank 2 is not a rank of a group of 2"),
    ("HcomBroadcast", {"root_rank": 1, "rank_ids": [7]}, "float32", "root_rank 1 is not a rank of a group of 1"),
    ("HcomSend", {"sr_tag": 0, "dest_rank": -1}, "float32", "dest_rank must be >= 0"),
    ("HcomSend", {"sr_tag": 0}, "float32", "required attribute 'dest_rank'"),
])
def test_bad_attributes_and_dtypes_are_named(op_type, attrs, dtype, message):
    with pytest.raises(OpError, match=message):
        infer(op_type, dtype=dtype, **attrs)


@pytest.mark.parametrize("attrs,message", [
    ({"sr_tag": 0, "src_rank": 1, "shape": [2, -1], "dtype": "float32"}, "shape must be a list of dims >= 0"),
    ({"sr_tag": 0, "src_rank": 1, "shape": [2], "dtype": "bool"}, "dtype 'bool' is not one HCCL's HcomReceive takes"),
    ({"sr_tag": 0, "src_rank": 1, "dtype": "float32"}, "required attribute 'shape'"),
])
def test_bad_receive_attributes(attrs, message):
    with pytest.raises(OpError, match=message):
        get_op("HcomReceive").infer(Node("r", "HcomReceive", attrs))


@pytest.mark.parametrize("op_type,attrs", [
    ("HcomAllReduce", {"reduction": "prod"}), ("HcomAllGather", {"rank_size": 1}),
    ("HcomReduceScatter", {"rank_size": 1, "reduction": "min"}), ("HcomAllToAll", {}),
    ("HcomBroadcast", {"root_rank": 0, "rank_ids": [3]}),
])
def test_the_kernel_is_the_collective_over_one_rank(op_type, attrs):
    spec = get_op(op_type)
    x = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    outs = spec.infer(node(op_type, [x.shape], "int32", **attrs))
    got = spec.compute(KernelArgs({}, 0, 1, attrs, outs), [x])
    assert len(got) == 1 and got[0].dtype == np.int32
    np.testing.assert_array_equal(got[0], x)      # one rank: every collective gives its input back


def test_the_kernel_refuses_a_bigger_group():
    spec = get_op("HcomAllReduce")
    attrs = {"reduction": "sum", "rank_size": 2}
    with pytest.raises(OpError, match="needs a group of 2 ranks"):
        spec.compute(KernelArgs({}, 0, 1, attrs, [TensorDesc((2,), "float32")]), [np.ones(2, np.float32)])


@pytest.mark.parametrize("op_type,attrs,want", [
    ("HcomAllReduce", {"reduction": "sum"}, None),
    ("HcomAllReduce", {"reduction": "sum", "rank_size": 1}, None),
    ("HcomAllReduce", {"reduction": "sum", "rank_size": 4},
     "HcomAllReduce 'ar' needs a group of 4 ranks: run the model with --world-size 4 or --rank-table"),
    ("HcomAllGather", {"rank_ids": [3, 1, 2]}, "HcomAllGather 'ar' needs a group of 3 ranks"),
    ("HcomSend", {"dest_rank": 0}, "HcomSend 'ar' needs a group of 2 ranks"),
    ("HcomReceive", {"src_rank": 5}, "HcomReceive 'ar' needs a group of 6 ranks"),
])
def test_local_refusal(op_type, attrs, want):
    got = H.local_refusal(op_type, "ar", attrs)
    assert got == want if want is None else got.startswith(want)


def test_collective_bytes_is_hccl_tests_data_size():
    x = TensorDesc((4, 8), "float16")                 # 64 bytes
    assert H.collective_bytes("HcomAllReduce", {"reduction": "sum"}, [x]) == 64
    assert H.collective_bytes("HcomAllGather", {"rank_size": 4}, [x]) == 256        # the gathered output
    assert H.collective_bytes("HcomReduceScatter", {"rank_size": 4}, [x]) == 64     # the input
    assert H.collective_bytes("HcomAllToAll", {}, [x]) == 64
    assert H.collective_bytes("HcomBroadcast", {"root_rank": 0}, [x, TensorDesc((3,), "int32")]) == 76
    assert H.collective_bytes("HcomSend", {"dest_rank": 1}, [x]) == 64
    assert H.collective_bytes("HcomReceive", {"shape": [5, 2], "dtype": "bfloat16"}, []) == 20
    with pytest.raises(OpError, match="Relu is not an HCCL op"):
        H.collective_bytes("Relu", {}, [x])


def test_pricing_an_hccl_op_gives_its_bytes_and_no_block_work():
    spec = get_op("HcomAllGather")
    ctx = tiling_context(spec, [TensorDesc((4, 8), "float32")], [TensorDesc((8, 8), "float32")], {"rank_size": 2},
                         load_soc("Ascend910B1"))
    t = spec.tiling(ctx)
    assert (t.block_dim, t.tiling_key, t.tiling_data) == (1, 0, b"")
    w = spec.launch_work(ctx)
    assert (w.bytes, w.vector_ops, w.fractals) == (256, 0, 0)


def test_a_graph_node_infers_through_the_registry():
    """The frontends' path: infer_node names the node in an E14001 when the op rejects its attributes."""
    from atc_py.common.errors import AtcError
    from atc_py.ops.core.infer import infer_node
    g = Graph("g")
    x = g.add_node("x", "Data", out_descs=[TensorDesc((4,), "float32")], attrs={"index": 0}).outputs[0]
    n = g.add_node("ar", "HcomAllReduce", [x], [TensorDesc((), "float32")], {"reduction": "mean"})
    with pytest.raises(AtcError, match=r"E14001.*ar.*HcomAllReduce.*reduction 'mean' is not one of"):
        infer_node(n)
