"""Collectives from the frameworks: ONNX nodes of the custom domain `ascend` (adapters/hccl.py) and tf_adapter's
Hcom ops in TensorFlow GraphDefs (tensorflow/adapters/hccl.py) become GE's Hcom ops with GE's attributes; a bad
attribute is one ATC-style error naming the node and what is wrong, with no output written."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import atc_py
from atc_py.common.errors import AtcError
from atc_py.proto import tf_graph_pb2 as tf
from tests.helpers.hccl_models import hcom_graph_model, hcom_model, hcom_node
from tests.helpers.om_files import simulate_om
from tests.helpers.tf_models import OPTS as TF_OPTS

OPTS = {"ge.socVersion": "Ascend910B1", "om_name": "m", "ge.exec.precision_mode": "must_keep_origin_dtype"}


def _node_of(result, op_type):
    return next(n for n in result.graph.nodes if n.op_type == op_type)


def test_onnx_attributes_become_ges():
    r = atc_py.build(hcom_model("HcomAllReduce", (4, 8), name="ar", reduction="max", group="tp", rank_ids=[2, 0],
                                fusion=2, fusion_id=9), OPTS)
    assert _node_of(r, "HcomAllReduce").attrs == {"reduction": "max", "group": "tp", "rank_ids": [2, 0],
                                                   "fusion": 2, "fusion_id": 9}


@pytest.mark.parametrize("dtype,want", [(TensorProto.FLOAT16, "float16"), ("int32", "int32")])
def test_onnx_receive_dtype_is_an_element_type_or_a_name(dtype, want):
    nodes = [hcom_node("HcomReceive", [], ["y"], sr_tag=1, src_rank=1, shape=[3, 2], dtype=dtype)]
    r = atc_py.build(hcom_graph_model(nodes, [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
                     OPTS)
    out = _node_of(r, "HcomReceive").outputs[0].desc
    assert (out.shape, out.dtype) == ((3, 2), want)


@pytest.mark.parametrize("model,message", [
    (hcom_model("HcomAllReduce", (4, 8), name="ar", reduction="sum", rank_ids=[1, 3, 1]),
     "E14001.*ar.*HcomAllReduce.*rank_ids names rank 1 twice"),
    (hcom_model("HcomReduceScatter", (5, 8), name="rs", reduction="sum", rank_size=2),
     r"E14001.*rs.*HcomReduceScatter.*first dimension 5 of \[5, 8\] does not split into rank_size 2 parts"),
    (hcom_model("HcomAllReduce", (4, 8), TensorProto.INT16, name="ar", reduction="prod"),
     "E14001.*reduction 'prod' does not take int16"),
    (hcom_model("HcomReceive", (2,), name="rv", sr_tag=0, src_rank=1, dtype=14),
     "E14001.*rv.*dtype 14 is not an ONNX element type Ascend has"),
    (hcom_graph_model([hcom_node("HcomSend", ["x"], ["z"], name="sd", sr_tag=0, dest_rank=1)],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])]),
     "E14001.*sd.*HcomSend has no output"),
])
def test_onnx_bad_attributes_are_clear_errors(model, message):
    with pytest.raises(AtcError, match=message):
        atc_py.build(model, OPTS)


def test_the_command_line_reports_a_bad_reduction_without_a_traceback(atc, tmp_path):
    src = tmp_path / "ar.onnx"
    src.write_bytes(hcom_model("HcomAllReduce", (4, 8), name="ar", reduction="mean").SerializeToString())
    code, out, err = atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'ar'}",
                         "--soc_version=Ascend910B1")
    text = out + err
    assert code != 0
    assert "E14001" in text and "reduction 'mean' is not one of sum, prod, max, min" in text
    assert "Traceback" not in text and not (tmp_path / "ar.om").exists()


# -- TensorFlow ------------------------------------------------------------------------------------------------
def _tf_node(name, op, inputs=(), **attrs):
    n = tf.NodeDef(name=name, op=op, input=list(inputs))
    for k, v in attrs.items():
        n.attr[k].CopyFrom(v)
    return n


def _shape(dims):
    return tf.TensorShapeProto(dim=[tf.TensorShapeProto.Dim(size=d) for d in dims])


def _placeholder(name, dims):
    return _tf_node(name, "Placeholder", dtype=tf.AttrValue(type=tf.DT_FLOAT), shape=tf.AttrValue(shape=_shape(dims)))


F32 = tf.AttrValue(type=tf.DT_FLOAT)
WORLD = tf.AttrValue(s=b"hccl_world_group")


def test_tf_hcom_all_reduce_converts_and_runs_as_one_rank(tmp_path):
    g = tf.GraphDef(node=[_placeholder("x", [4, 8]),
                          _tf_node("ar", "HcomAllReduce", ["x"], T=F32, reduction=tf.AttrValue(s=b"sum"), group=WORLD,
                                   fusion=tf.AttrValue(i=0), fusion_id=tf.AttrValue(i=-1))])
    r = atc_py.build(g, TF_OPTS)
    assert _node_of(r, "HcomAllReduce").attrs == {"reduction": "sum", "group": "hccl_world_group", "fusion": 0,
                                                   "fusion_id": -1}
    assert r.summary["tasks_by_type"] == {"HCCL": 1}
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    outs, _ = simulate_om(r.om, [x], tmp_path)
    np.testing.assert_array_equal(outs[0], x)


def test_tf_broadcast_send_receive_and_gather():
    g = tf.GraphDef(node=[
        _placeholder("a", [2, 3]), _placeholder("b", [4]),
        _tf_node("bc", "HcomBroadcast", ["a", "b"], T=tf.AttrValue(list=tf.AttrValue.ListValue(
            type=[tf.DT_FLOAT, tf.DT_FLOAT])), group=WORLD, root_rank=tf.AttrValue(i=0)),
        _tf_node("ag", "HcomAllGather", ["bc:0"], T=F32, group=WORLD, rank_size=tf.AttrValue(i=2)),
        _tf_node("sd", "HcomSend", ["bc:1"], T=F32, group=WORLD, sr_tag=tf.AttrValue(i=4),
                 dest_rank=tf.AttrValue(i=1)),
        _tf_node("rv", "HcomReceive", [], T=F32, group=WORLD, sr_tag=tf.AttrValue(i=4), src_rank=tf.AttrValue(i=1),
                 shape=tf.AttrValue(shape=_shape([4]))),
    ])
    r = atc_py.build(g, TF_OPTS)
    assert [d.shape for d in (v.desc for v in _node_of(r, "HcomBroadcast").outputs)] == [(2, 3), (4,)]
    assert _node_of(r, "HcomAllGather").outputs[0].desc.shape == (4, 3)
    assert _node_of(r, "HcomSend").attrs == {"group": "hccl_world_group", "sr_tag": 4, "dest_rank": 1}
    rv = _node_of(r, "HcomReceive")
    assert rv.attrs["shape"] == [4] and rv.attrs["dtype"] == "float32"
    assert r.summary["tasks_by_type"]["HCCL"] == 4


@pytest.mark.parametrize("node,message", [
    (_tf_node("ag", "HcomAllGather", ["x"], T=F32, group=WORLD, rank_size=tf.AttrValue(s=b"2")),
     "E14001.*ag.*attribute rank_size is a s; TensorFlow gives it as an int"),
    (_tf_node("ar", "HcomAllReduce", ["x"], T=F32, group=WORLD, reduction=tf.AttrValue(s=b"avg")),
     "E14001.*ar.*reduction 'avg' is not one of"),
    (_tf_node("rv", "HcomReceive", [], T=F32, group=WORLD, sr_tag=tf.AttrValue(i=0), src_rank=tf.AttrValue(i=1)),
     "E14001.*rv.*HcomReceive needs its shape attribute"),
])
def test_tf_bad_attributes_are_clear_errors(node, message):
    with pytest.raises(AtcError, match=message):
        atc_py.build(tf.GraphDef(node=[_placeholder("x", [4, 8]), node]), TF_OPTS)
