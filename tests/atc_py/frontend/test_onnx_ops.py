"""ONNX operators that exported transformers and CNN/mobile models use: each a one-node (or short) model run
through AtcBackend (atc-py → .om → om-run simulator) and through onnxruntime on the same inputs."""
from functools import partial

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_conformance.backend import AtcBackend
from atc_py.common.errors import AtcError
from tests.helpers.onnx_builders import onnx_model

F = TensorProto.FLOAT
RNG = np.random.default_rng(7)


model = partial(onnx_model, opset=17, ir_version=8)


def check(m, xs, rtol=1e-4, atol=1e-5):
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {
        i.name: x for i, x in zip([i for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}], xs)})
    got = AtcBackend.run_model(m, xs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def x(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


UNARY = ["Exp", "Neg", "Abs", "Erf", "Sign", "Floor", "Ceil", "Softsign", "Softplus", "Relu", "Sigmoid", "Tanh",
         "HardSwish", "Elu", "Selu", "LeakyRelu", "HardSigmoid", "Shrink"]


@pytest.mark.parametrize("op", UNARY)
def test_unary(op):
    check(model([helper.make_node(op, ["x"], ["y"])], [("x", F, [3, 5])], [("y", F, None)]), [x(3, 5)])


@pytest.mark.parametrize("op", ["Sqrt", "Log", "Reciprocal"])
def test_unary_positive(op):
    check(model([helper.make_node(op, ["x"], ["y"])], [("x", F, [4, 6])], [("y", F, None)]),
          [np.abs(x(4, 6)) + 0.5])


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mean", "Sum", "PRelu"])
def test_broadcast_binary(op):
    a, b = np.abs(x(2, 3, 4)) + 0.1, x(3, 1)
    check(model([helper.make_node(op, ["a", "b"], ["y"])], [("a", F, [2, 3, 4]), ("b", F, [3, 1])],
                [("y", F, None)]), [a, b])


def test_gelu_chain_where_equal_cast():
    """x * 0.5 * (1 + erf(x / sqrt 2)) as exported, then Where(Equal(Cast(idx)), ...)."""
    nodes = [helper.make_node("Div", ["x", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["x", "e1"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["gelu"]),
             helper.make_node("Cast", ["idx"], ["fidx"], to=F),
             helper.make_node("Equal", ["fidx", "one"], ["mask"]),
             helper.make_node("Where", ["mask", "gelu", "x"], ["y"])]
    inits = [("sqrt2", np.array(np.sqrt(2), np.float32)), ("one", np.array(1, np.float32)),
             ("half", np.array(0.5, np.float32))]
    m = model(nodes, [("x", F, [2, 8]), ("idx", TensorProto.INT64, [2, 8])], [("y", F, None)], inits)
    check(m, [x(2, 8), RNG.integers(0, 3, (2, 8))])


def test_shape_constantofshape_expand_chain_folds():
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["z"], value=numpy_helper.from_array(np.array([2.0], np.float32))),
             helper.make_node("Expand", ["b", "s"], ["bb"]), helper.make_node("Add", ["z", "bb"], ["y"])]
    m = model(nodes, [("x", F, [3, 4])], [("y", F, None)], [("b", np.ones((1, 4), np.float32))])
    check(m, [x(3, 4)])
    r = atc_py.build(m, {"ge.socVersion": "Ascend910B1"})
    assert [n.op_type for n in r.graph.nodes if n.op_type not in ("Data", "NetOutput")] == ["Const"]


def test_gather_slice_split_unsqueeze_squeeze():
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["e"], axis=0),
             helper.make_node("Slice", ["e", "st", "en", "ax"], ["s"]),
             helper.make_node("Split", ["s", "sp"], ["a", "b"], axis=2),
             helper.make_node("Unsqueeze", ["a", "u"], ["ua"]), helper.make_node("Squeeze", ["ua", "u"], ["y1"]),
             helper.make_node("Softmax", ["b"], ["y2"], axis=1)]
    inits = [("emb", x(10, 6)), ("st", np.array([1], np.int64)), ("en", np.array([-1], np.int64)),
             ("ax", np.array([1], np.int64)), ("sp", np.array([2, 4], np.int64)), ("u", np.array([0], np.int64))]
    m = model(nodes, [("ids", TensorProto.INT64, [2, 5])], [("y1", F, None), ("y2", F, None)], inits)
    check(m, [RNG.integers(0, 10, (2, 5))])


def test_matmul_broadcast_layernorm_reducemean():
    nodes = [helper.make_node("MatMul", ["a", "w"], ["m"]),
             helper.make_node("LayerNormalization", ["m", "g", "b"], ["ln"], axis=-1),
             helper.make_node("ReduceMean", ["ln"], ["y"], axes=[1], keepdims=0)]
    m = model(nodes, [("a", F, [2, 3, 5, 8])], [("y", F, None)],
              [("w", x(8, 16)), ("g", x(16)), ("b", x(16))], opset=17)
    check(m, [x(2, 3, 5, 8)], rtol=1e-3, atol=1e-4)


def test_trilu_softmax_any_axis():
    nodes = [helper.make_node("Trilu", ["x"], ["t"], upper=0), helper.make_node("Softmax", ["t"], ["y"], axis=0)]
    check(model(nodes, [("x", F, [4, 4])], [("y", F, None)]), [x(4, 4)])


@pytest.mark.parametrize("opset", [6, 11, 13])
def test_clip_opsets(opset):
    if opset == 6:
        n = helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.5)
        m = model([n], [("x", F, [3, 4])], [("y", F, None)], opset=6)
    else:
        n = helper.make_node("Clip", ["x", "lo", "hi"], ["y"])
        m = model([n], [("x", F, [3, 4])], [("y", F, None)], [("lo", np.array(-0.5, np.float32)),
                                                               ("hi", np.array(0.5, np.float32))], opset=opset)
    check(m, [x(3, 4)])


def test_grouped_and_transposed_conv():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], group=2, pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("ConvTranspose", ["c", "wt", "bt"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1],
                              output_padding=[1, 1])]
    m = model(nodes, [("x", F, [1, 4, 9, 9])], [("y", F, None)],
              [("w", x(6, 2, 3, 3)), ("wt", x(6, 3, 3, 3)), ("bt", x(3))])
    check(m, [x(1, 4, 9, 9)], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("mode,coord", [("nearest", "asymmetric"), ("linear", "half_pixel"),
                                        ("linear", "align_corners"), ("nearest", "half_pixel")])
def test_resize(mode, coord):
    n = helper.make_node("Resize", ["x", "", "sc"], ["y"], mode=mode, coordinate_transformation_mode=coord)
    # 5 x 1.6 = 8 output columns: a whole output width, where ONNX's align_corners (scale * length) and
    # onnxruntime's (the integer length) agree
    m = model([n], [("x", F, [1, 2, 4, 5])], [("y", F, None)], [("sc", np.array([1, 1, 2, 1.6], np.float32))])
    check(m, [x(1, 2, 4, 5)])


def test_upsample_opset9():
    n = helper.make_node("Upsample", ["x", "sc"], ["y"], mode="nearest")
    m = model([n], [("x", F, [1, 2, 3, 3])], [("y", F, None)], [("sc", np.array([1, 1, 2, 2], np.float32))], opset=9)
    check(m, [x(1, 2, 3, 3)])


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_modes_opset18_axes(mode):
    n = helper.make_node("Pad", ["x", "p", "", "ax"], ["y"], mode=mode)
    m = model([n], [("x", F, [2, 4, 5])], [("y", F, None)], [("p", np.array([1, 2, 2, 1], np.int64)),
                                                            ("ax", np.array([1, 2], np.int64))], opset=18)
    check(m, [x(2, 4, 5)])


def test_argmax_and_topk_on_aicpu():
    nodes = [helper.make_node("ArgMax", ["x"], ["i"], axis=1, keepdims=0),
             helper.make_node("TopK", ["x", "k"], ["v", "j"], axis=-1)]
    m = model(nodes, [("x", F, [3, 7])], [("i", TensorProto.INT64, None), ("v", F, None),
                                          ("j", TensorProto.INT64, None)], [("k", np.array([3], np.int64))])
    check(m, [x(3, 7)])
    r = atc_py.build(m, {"ge.socVersion": "Ascend910B1"})
    engines = {n.op_type: n.meta["engine"] for n in r.graph.nodes if "engine" in n.meta}
    assert engines["TopKV2"] == "AICPU" and engines["ArgMaxD"] == "AICORE"


def test_split_opset18_num_outputs_uneven():
    n = helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)
    m = model([n], [("x", F, [2, 7])], [("a", F, None), ("b", F, None), ("c", F, None)], opset=18)
    check(m, [x(2, 7)])


def test_split_num_outputs_over_a_dim_known_only_at_run_time():
    """The chunks of ceil(dim / n), the last smaller, sized by the kernel (the compile-time sizes were [0, -1])."""
    nodes = [helper.make_node("Reshape", ["x", "s"], ["r"]),
             helper.make_node("Split", ["r"], ["a", "b", "c"], axis=1, num_outputs=3)]
    m = model(nodes, [("x", F, [2, 7]), ("s", TensorProto.INT64, [2])], [("a", F, None), ("b", F, None), ("c", F, None)],
              opset=18)
    check(m, [x(2, 7), np.array([2, 7], np.int64)])
    check(m, [x(2, 7), np.array([1, 14], np.int64)])


@pytest.mark.parametrize("opset", [9, 13])
def test_an_inference_dropouts_mask_is_all_ones(opset):
    """bool from opset 10, the data's type before; the data output is the input. onnx.reference (and the
    node conformance cases) give ones; onnxruntime's kernels before opset 12 leave the mask zero, so opset 9 is
    compared with onnx.reference."""
    from onnx.reference import ReferenceEvaluator
    nodes = [helper.make_node("Dropout", ["x"], ["y", "mask"], **({"ratio": 0.3} if opset < 12 else {})),
             helper.make_node("Relu", ["y"], ["z"])]
    mask_type = TensorProto.BOOL if opset >= 10 else F
    m = model(nodes, [("x", F, [3, 4])], [("z", F, None), ("mask", mask_type, None)], opset=opset)
    xs = [x(3, 4)]
    if opset >= 12:
        check(m, xs)
    z, mask = AtcBackend.run_model(m, xs)
    np.testing.assert_array_equal(z, ReferenceEvaluator(m).run(None, {"x": xs[0]})[0])
    assert mask.dtype == (np.bool_ if opset >= 10 else np.float32) and mask.shape == (3, 4) and np.all(mask == 1)


def test_a_training_dropout_of_a_constant_nonzero_ratio_is_refused():
    nodes = [helper.make_node("Dropout", ["x", "r", "t"], ["y"])]
    m = model(nodes, [("x", F, [3, 4])], [("y", F, None)], opset=13)
    m.graph.initializer.extend([numpy_helper.from_array(np.array(0.5, np.float32), "r"),
                                numpy_helper.from_array(np.array(True), "t")])
    with pytest.raises(AtcError) as e:
        atc_py.build(m, {"ge.socVersion": "Ascend910B1"})
    assert e.value.code == "E14001" and "drops random elements" in str(e.value)


def test_a_training_mode_batchnorm_uses_the_batch_statistics_and_updates_the_running_ones():
    from onnx.reference import ReferenceEvaluator
    n = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1,
                         momentum=0.8, epsilon=1e-3)
    m = model([n], [("x", F, [4, 3, 5, 2]), ("s", F, [3]), ("b", F, [3]), ("m", F, [3]), ("v", F, [3])],
              [("y", F, None), ("rm", F, None), ("rv", F, None)], opset=15)
    xs = [x(4, 3, 5, 2) * 3 + 1, x(3), x(3), x(3), np.abs(x(3)) + 0.5]
    want = ReferenceEvaluator(m).run(None, dict(zip("xsbmv", xs)))
    for got, ref in zip(AtcBackend.run_model(m, xs), want):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_expand_with_runtime_shape_runs_in_a_dynamic_partition():
    n = helper.make_node("Expand", ["x", "s"], ["y"])
    m = model([n], [("x", F, [3, 1]), ("s", TensorProto.INT64, [2])], [("y", F, None)])
    check(m, [x(3, 1), np.array([3, 4], np.int64)])
    r = atc_py.build(m, {"ge.socVersion": "Ascend910B1"})
    assert r.summary["unknown_subgraphs"] == 1


def test_unsupported_ops_and_opsets_named_in_one_error():
    nodes = [helper.make_node("ImageDecoder", ["x"], ["e"]),
             helper.make_node("Gelu", ["e"], ["g"]), helper.make_node("Multinomial", ["g"], ["y"])]
    m = model(nodes, [("x", F, [2, 2])], [("y", F, None)], opset=17)
    with pytest.raises(AtcError) as e:
        atc_py.build(m, {"ge.socVersion": "Ascend910B1"})
    msg = str(e.value)
    assert e.value.code == "E19010"
    assert "ImageDecoder (domain ai.onnx, opset 17, no adapter)" in msg
    assert "Gelu (domain ai.onnx, opset 17, supported opsets 20-28)" in msg
    assert "Multinomial" in msg


def test_opsets_up_to_the_newest_onnx_defines():
    """Every opset the installed onnx defines is accepted; one beyond it is not a valid model."""
    newest = onnx.defs.onnx_opset_version()
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [2])], [("y", F, None)], opset=newest)
    check(m, [np.array([-1.0, 2.0], np.float32)])
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [2])], [("y", F, None)], opset=newest + 1)
    with pytest.raises(AtcError) as e:
        atc_py.build(m, {"ge.socVersion": "Ascend910B1"})
    assert e.value.code == "E10041" and f"opset {newest + 1}" in str(e.value)


def test_float64_model_compiles():
    check(model([helper.make_node("Add", ["a", "b"], ["y"])], [("a", TensorProto.DOUBLE, [3]),
                                                               ("b", TensorProto.DOUBLE, [3])],
                [("y", TensorProto.DOUBLE, None)]), [np.arange(3.0), np.ones(3)])


