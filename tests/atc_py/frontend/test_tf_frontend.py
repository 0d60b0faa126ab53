"""TensorFlow frozen graphs (--framework=3): the TF 2.21 testdata models compile and match the expected outputs;
GraphDef handling (outputs, --out_nodes, control inputs, unsupported ops, bad files)."""

import numpy as np
import pytest

import atc_py
from atc_py.common.errors import AtcError
from atc_py.proto import tf_graph_pb2 as tf
from tests.helpers import DATA
from tests.helpers.tf_models import OPTS, build_and_run_tf

TF = DATA / "tf"   # copied from ../shared/testdata/tf (TF 2.21)




@pytest.mark.parametrize("name", ["tf_lenet", "tf_ops_mix"])
def test_testdata_model_matches_tensorflow(tmp_path, name):
    ins = np.load(TF / f"{name}.inputs.npz")
    exp = np.load(TF / f"{name}.expected.npz")
    r, outs = build_and_run_tf(tmp_path, str(TF / f"{name}.pb"), [ins[k] for k in ins.files])
    names = (TF / f"{name}.outputs.txt").read_text().split()
    assert [n.split(":")[0] for n in r.graph.net_output.attrs["output_names"]] == names
    assert len(outs) == len(exp.files)
    for got, key in zip(outs, exp.files):
        assert got.dtype == exp[key].dtype
        np.testing.assert_allclose(got, exp[key], rtol=1e-4, atol=1e-5)


def test_lenet_nhwc_transposes_cancel_between_pool_and_conv():
    on = atc_py.build(str(TF / "tf_lenet.pb"), OPTS)
    off = atc_py.build(str(TF / "tf_lenet.pb"), {**OPTS, "optimization_switch": "transpose_cancel:off"})
    assert on.summary["transposes_cancelled"] > 0
    assert on.summary["tasks"] < off.summary["tasks"]
    # the NHWC transposes around BiasAdd + Relu sink and cancel too: only the input's and the one before the
    # Reshape stay, and those become the TransData from NHWC into NC1HWC0 and back (passes/formats.py);
    # BiasAdd becomes the conv's bias and Relu its epilogue
    kinds = [n.op_type for n in on.graph.nodes if n.op_type not in ("Data", "Const", "NetOutput", "Cast")]
    assert kinds == ["TransData", "Conv2D", "MaxPoolV3", "Conv2D", "MaxPoolV3", "TransData", "Reshape", "MatMulV2",
                     "SoftmaxV2"]
    ends = [n for n in on.graph.nodes if n.op_type == "TransData"]
    assert [n.attrs["src_format"] for n in ends] == ["NHWC", "NC1HWC0"] and ends[1].attrs["dst_format"] == "NHWC"
    assert on.summary["bias_fused_into_conv"] == 2 and on.summary["relu_fused"] == 2


def node(name, op, inputs=(), **attrs):
    n = tf.NodeDef(name=name, op=op, input=list(inputs))
    for k, v in attrs.items():
        n.attr[k].CopyFrom(v)
    return n


def const(name, arr):
    t = tf.TensorProto(dtype=tf.DT_FLOAT if arr.dtype == np.float32 else tf.DT_INT32,
                       tensor_shape=tf.TensorShapeProto(dim=[tf.TensorShapeProto.Dim(size=d) for d in arr.shape]),
                       tensor_content=arr.tobytes())
    return node(name, "Const", value=tf.AttrValue(tensor=t), dtype=tf.AttrValue(type=t.dtype))


def placeholder(name, shape):
    return node(name, "Placeholder", dtype=tf.AttrValue(type=tf.DT_FLOAT),
                shape=tf.AttrValue(shape=tf.TensorShapeProto(dim=[tf.TensorShapeProto.Dim(size=d) for d in shape])))


def graph(*nodes):
    return tf.GraphDef(node=list(nodes))


def test_outputs_are_unconsumed_nodes_and_out_nodes_overrides(tmp_path):
    g = graph(placeholder("x", [2, 3]), const("c", np.full((2, 3), 2, np.float32)),
              node("a", "AddV2", ["x", "c"]), node("m", "Mul", ["a", "c", "^x"]), node("n", "Neg", ["a"]),
              node("noop", "NoOp", ["^x"]))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    r, outs = build_and_run_tf(tmp_path, g, [x])
    assert r.graph.net_output.attrs["output_names"] == ["m:0", "n:0"]
    np.testing.assert_allclose(outs[0], (x + 2) * 2)
    r, outs = build_and_run_tf(tmp_path, g, [x], **{"ge.outputNodeName": "a:0"})
    np.testing.assert_allclose(outs[0], x + 2)


def test_splat_constant_and_strided_slice_masks(tmp_path):
    splat = tf.TensorProto(dtype=tf.DT_FLOAT, float_val=[1.5],
                           tensor_shape=tf.TensorShapeProto(dim=[tf.TensorShapeProto.Dim(size=4)]))
    ints = lambda n, v: const(n, np.array(v, np.int32))  # noqa: E731
    g = graph(placeholder("x", [3, 4]), node("s", "Const", value=tf.AttrValue(tensor=splat)),
              node("a", "Mul", ["x", "s"]), ints("b", [1, 0]), ints("e", [0, 3]), ints("st", [1, 1]),
              node("y", "StridedSlice", ["a", "b", "e", "st"], begin_mask=tf.AttrValue(i=0),
                   end_mask=tf.AttrValue(i=1), shrink_axis_mask=tf.AttrValue(i=0)))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    _, outs = build_and_run_tf(tmp_path, g, [x])
    np.testing.assert_allclose(outs[0], (x * 1.5)[1:, 0:3])


def test_unsupported_tf_ops_all_named():
    g = graph(placeholder("x", [2]), node("a", "Cumprod", ["x"]), node("b", "Erfinv", ["a"]),
              node("c", "Cumprod", ["b"]))
    with pytest.raises(AtcError) as e:
        atc_py.build(g, OPTS)
    assert e.value.code == "E19010"
    assert "Cumprod (framework TensorFlow): 2 node(s) a, c" in str(e.value) and "Erfinv" in str(e.value)


def test_bad_pb_file_is_e10041(tmp_path):
    p = tmp_path / "bad.pb"
    p.write_bytes(b"\xff\xff\xff garbage")
    with pytest.raises(AtcError) as e:
        atc_py.build(str(p), OPTS)
    assert e.value.code == "E10041"


def test_cli_tf_and_input_format(atc, tmp_path):
    code, out, err = atc("--model", str(TF / "tf_lenet.pb"), "--framework=3", f"--output={tmp_path}/lenet",
                         "--soc_version=Ascend910B1", "--input_format=NHWC")
    assert code == 0, err
    assert (tmp_path / "lenet.om").is_file()
    code, out, err = atc("--model", str(TF / "tf_lenet.pb"), "--framework=3", f"--output={tmp_path}/l2",
                         "--soc_version=Ascend910B1", "--input_format=NC1HWC0")
    assert code != 0 and "E10001" in out + err and "in TF model" in out + err
