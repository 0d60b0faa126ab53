"""om-run compare (msit debug compare's command line): the framework model in onnxruntime (or the reference path for
a TensorFlow .pb) against the .om's dumps, every framework tensor matched through the original names, fused
kernels' inner values and compile-time folds included; the first divergent node and whether its error is its own."""
import csv
import json
import pathlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.helpers import DATA, MODELS
from tests.helpers.overflow_models import X as OVF_X
from tests.helpers.overflow_models import model as overflow_model
from tests.helpers.overflow_models import overflow_ops
from tools.resnet50_onnx import resnet50

REAL_MODELS = DATA / "real_models"


def _result(out_dir: pathlib.Path):
    [run] = [p for p in out_dir.iterdir() if p.is_dir()]
    [csv_path] = run.glob("result_*.csv")
    with open(csv_path, newline="") as f:
        rows = list(csv.reader(f))
    return run, rows[0], rows[1:], json.loads((run / "summary.json").read_text())


def _compare(om_run, tmp_path, golden, om, *extra):
    out = tmp_path / "cmp"
    code, stdout, stderr = om_run("compare", "-gm", str(golden), "-om", str(om), "-o", str(out), *extra)
    assert code == 0, stdout + stderr
    return (stdout, *_result(out))


def _check_accuracy(header, rows, summary, ratio=0.9, cosine=0.9999):
    status, cos = header.index("Status"), header.index("CosineSimilarity")
    assert summary["matched_ratio"] >= ratio, summary["counts"]
    matched = [r for r in rows if r[status] in ("ok", "divergent", "first_divergent")]
    assert matched and all(float(r[cos]) >= cosine for r in matched), min(float(r[cos]) for r in matched)
    assert {r[status] for r in rows} <= {"ok", "divergent", "first_divergent", "fused", "not_comparable"}


@pytest.mark.heavy
def test_resnet50_force_fp32_matches_every_tensor_inside_fused_convolutions(atc, om_run, tmp_path):
    src = tmp_path / "resnet50.onnx"
    onnx.save(resnet50(size=64), src)
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'r50'}", "--soc_version=Ascend910B3",
               "--precision_mode=force_fp32")[0] == 0
    stdout, run, header, rows, summary = _compare(om_run, tmp_path, src, tmp_path / "r50.om")
    _check_accuracy(header, rows, summary)
    assert summary["tensors"] == 122 and summary["golden_engine"].startswith("onnxruntime")
    by_node = {r[header.index("GroundTruth")]: r for r in rows}
    # conv2 + Add + Relu are one Conv2D: the conv's and the add's results come from its kernel's shorter epilogues
    inner = by_node["/layer1/layer1.0/Add"]
    assert inner[header.index("NPUDump")] == "_layer1_layer1.0_conv3_Conv"
    assert "without its fused Relu" in inner[header.index("Detail")]
    assert "first_divergent" not in summary
    assert (run / "dump_data" / "npu" / "r50" / "dump_index.json").is_file()
    assert len(list((run / "dump_data" / "onnx").glob("*.npy"))) == 122
    assert "no divergent tensor" in stdout


def test_transformer_encoder_matches_autofused_and_compile_time_tensors(atc, om_run, tmp_path):
    src = REAL_MODELS / "hf_bert.eager.opset17.onnx"
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'bert'}", "--soc_version=Ascend910B3",
               "--precision_mode=force_fp32", "--input_shape=input_ids:1,16;attention_mask:1,16")[0] == 0
    _, _, header, rows, summary = _compare(om_run, tmp_path, src, tmp_path / "bert.om")
    _check_accuracy(header, rows, summary)
    detail = header.index("Detail")
    by_node = {r[header.index("GroundTruth")]: r for r in rows}
    assert "AscIR node" in by_node["/model/encoder/layer.0/intermediate/intermediate_act_fn/Erf"][detail]
    assert "compile time" in by_node["/model/Range"][detail]       # shape arithmetic atc-py folded
    assert summary["counts"]["fused"] + summary["counts"]["not_comparable"] <= 0.1 * summary["tensors"]


def test_tensorflow_cnn_through_the_reference_path_in_its_nhwc_layout(atc, om_run, tmp_path):
    src = REAL_MODELS / "tf_keras_convnext.pb"
    assert atc(f"--model={src}", "--framework=3", f"--output={tmp_path / 'cnx'}", "--soc_version=Ascend910B3",
               "--precision_mode=force_fp32")[0] == 0
    _, run, header, rows, summary = _compare(om_run, tmp_path, src, tmp_path / "cnx.om")
    _check_accuracy(header, rows, summary)
    assert summary["golden_engine"].startswith("atc-py reference path")
    assert (run / "dump_data" / "tf").is_dir()


def test_an_fp16_overflow_is_the_first_divergent_node_and_its_own_error(atc, om_run, tmp_path):
    src, [ovf] = overflow_ops(atc, om_run, tmp_path, "m")
    stdout, _, header, rows, summary = _compare(om_run, tmp_path, src, tmp_path / "m.om", "-i",
                                                str(tmp_path / "x.npy"))
    first = summary["first_divergent"]
    assert first["node"] == "scale_up" and first["om_op"] == ovf["op_name"]     # inside the fused kernel
    assert first["locate"].startswith("own error")
    assert "first divergent node: scale_up (Mul)" in stdout
    status = [r[header.index("Status")] for r in rows]
    assert status == ["first_divergent", "divergent", "divergent"]
    assert rows[0][header.index("OverFlow")] == "YES"


def test_an_error_carried_in_from_upstream_is_inherited(atc, om_run, tmp_path):
    """x * 1.001 computed in fp16 (force_fp16) rounds to ~5e-4; the Sub kept in fp32 (--keep_dtype) then cancels
    it against a constant of nearly the same values: Sub is the first divergent node, but rerun with the framework's
    value of its input it is exact — the error was inherited."""
    x = np.linspace(1.0, 2.0, 64, dtype=np.float32).reshape(8, 8)
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"], name="scale"),
             helper.make_node("Sub", ["a", "c"], ["y"], name="cancel")]
    g = helper.make_graph(nodes, "inh", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 8])],
                          [numpy_helper.from_array(np.array(1.001, np.float32), "k"),
                           numpy_helper.from_array((x * np.float32(1.001) - 1e-4).astype(np.float32), "c")])
    src = tmp_path / "inh.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), src)
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "keep.cfg").write_text("cancel\n")
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'inh'}", "--soc_version=Ascend910B1",
               "--optimization_switch=autofuse:off", "--precision_mode=force_fp16",
               f"--keep_dtype={tmp_path / 'keep.cfg'}")[0] == 0
    _, _, _, _, summary = _compare(om_run, tmp_path, src, tmp_path / "inh.om", "-i", str(tmp_path / "x.npy"))
    first = summary["first_divergent"]
    assert first["node"] == "cancel", first
    assert first["locate"].startswith("inherited"), first["locate"]


def test_a_folded_batchnorm_leaves_the_convolution_fused_never_dropped(atc, om_run, tmp_path):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.random(4).astype(np.float32) + 0.5, "s"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "m"),
             numpy_helper.from_array(rng.random(4).astype(np.float32) + 0.5, "v")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "cbr", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    src = tmp_path / "cbr.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), src)
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'cbr'}", "--soc_version=Ascend910B1",
               "--precision_mode=force_fp32")[0] == 0
    _, _, header, rows, _ = _compare(om_run, tmp_path, src, tmp_path / "cbr.om")
    got = {r[header.index("GroundTruth")]: (r[header.index("Status")], r[header.index("NPUDump")]) for r in rows}
    assert got["conv"] == ("fused", "conv")               # the filter was scaled: its own output is gone
    assert got["bn"][0] == "ok" and got["relu"][0] == "ok"


def test_a_dropout_mask_nothing_reads_is_not_comparable_not_a_divergence(atc, om_run, tmp_path):
    """An opset-9 Dropout (SqueezeNet's) has a second output, its mask: the compiler drops it, so no .om tensor
    holds it; it was matched with the data of the convolution the Dropout went into (cosine 0, "own error")."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((2, 4, 1, 1)).astype(np.float32), "w2")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Dropout", ["r"], ["d", "mask"], name="drop", ratio=0.5),
             helper.make_node("Conv", ["d", "w2"], ["y"], name="conv2")]
    g = helper.make_graph(nodes, "dropout", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 8])], inits)
    src = tmp_path / "drop.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)], ir_version=4), src)
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'drop'}", "--soc_version=Ascend910B1",
               "--precision_mode=force_fp32")[0] == 0
    stdout, _, header, rows, summary = _compare(om_run, tmp_path, src, tmp_path / "drop.om")
    col = {name: header.index(name) for name in ("GroundTruth", "Status", "CosineSimilarity", "CompareFailReason")}
    drop = [r for r in rows if r[col["GroundTruth"]] == "drop"]
    assert [r[col["Status"]] for r in drop] == ["ok", "not_comparable"], drop
    assert "output 1 of Dropout, which nothing reads" in drop[1][col["CompareFailReason"]]
    assert "first divergent" not in stdout and float(drop[0][col["CosineSimilarity"]]) > 0.9999


def test_reference_evaluator_stands_in_without_onnxruntime(atc, om_run, tmp_path, monkeypatch):
    import builtins
    real = builtins.__import__

    def no_ort(name, *args, **kwargs):
        if name == "onnxruntime":
            raise ImportError(name)
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_ort)
    src = overflow_model(tmp_path / "m.onnx")
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'w'}", "--soc_version=Ascend910B1",
               "--precision_mode=force_fp32")[0] == 0
    _, _, header, rows, summary = _compare(om_run, tmp_path, src, tmp_path / "w.om")
    assert summary["golden_engine"] == "onnx.reference" and summary["counts"]["ok"] == 3


@pytest.mark.parametrize("case", ["shape", "suffix", "missing", "output_file", "count"])
def test_bad_compare_inputs_are_one_error_each(atc, om_run, tmp_path, case):
    src = overflow_model(tmp_path / "m.onnx")
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'm'}", "--soc_version=Ascend910B1")[0] == 0
    args = ["-gm", str(src), "-om", str(tmp_path / "m.om"), "-o", str(tmp_path / "o")]
    if case == "shape":       # a golden model whose input does not take the .om's shape
        other = tmp_path / "other.onnx"
        m = onnx.load(src)
        m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 5
        onnx.save(m, other)
        args[1] = str(other)
    elif case == "suffix":
        (tmp_path / "m.txt").write_text("x")
        args[1] = str(tmp_path / "m.txt")
    elif case == "missing":
        args[1] = str(tmp_path / "nope.onnx")
    elif case == "output_file":
        (tmp_path / "o").write_text("a file")
    elif case == "count":     # two input files for a one-input model
        np.save(tmp_path / "x.npy", OVF_X)
        args += ["-i", f"{tmp_path / 'x.npy'},{tmp_path / 'x.npy'}"]
    code, out, err = om_run("compare", *args)
    assert code == 1 and "Traceback" not in out + err
    assert err.count("[ERROR]") == 1, err
    assert ("E30002" in err) or ("E13004" in err), err
    if case in ("shape", "suffix", "missing"):
        assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


@pytest.mark.parametrize("name,shape,empty", [
    ("tv_vit.opset17", "x:1,3,32,32", 2),                   # attention's sunk transposes: the .om holds K untransposed
    ("tv_efficientnet.opset17", "x:1,3,64,64", 0),          # SE gates: a per-channel value the fused kernel broadcasts
    ("hf_gpt2.sdpa.dynamo18", "input_ids:1,8;attention_mask:1,8", 0),   # views of the model's inputs
])
def test_real_models_compare_without_false_divergence(atc, om_run, tmp_path, name, shape, empty):
    src = REAL_MODELS / f"{name}.onnx"
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'm'}", "--soc_version=Ascend910B3",
               "--precision_mode=force_fp32", f"--input_shape={shape}")[0] == 0
    _, _, header, rows, summary = _compare(om_run, tmp_path, src, tmp_path / "m.om")
    _check_accuracy(header, rows, summary, ratio=0.98)
    assert "first_divergent" not in summary
    assert summary["counts"]["not_comparable"] == empty      # ViT: two empty Slices (nothing to measure)


def test_default_fp16_builds_have_no_false_divergence(atc, om_run, tmp_path):
    """A fused LayerNorm that also exports its input's fp16 Cast: each output is matched by the AscIR node its
    Store writes, not by position (the Cast, named after the LayerNorm, once took its place)."""
    src = MODELS / "small_transformer.onnx"
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'st'}", "--soc_version=Ascend910B1")[0] == 0
    _, _, header, rows, summary = _compare(om_run, tmp_path, src, tmp_path / "st.om")
    assert "first_divergent" not in summary and summary["matched_ratio"] == 1.0
    by_node = {r[header.index("GroundTruth")]: r for r in rows}
    assert by_node["ln1"][header.index("TensorIndex")] == "ln1_ascbackend:output:1"
    assert float(by_node["ln1"][header.index("CosineSimilarity")]) > 0.9999


def test_a_detector_with_dynamic_post_processing_compares(atc, om_run, tmp_path):
    """RetinaNet with its box decoding and NMS: the host executor's ops (shapes met at run time) are dumped and
    rerun with the shapes they ran with; nothing diverges in fp32."""
    data = DATA / "detection"
    np.save(tmp_path / "img.npy", np.load(data / "retinanet.npz")["images"])
    assert atc(f"--model={data / 'retinanet.onnx'}", "--framework=5", f"--output={tmp_path / 'r'}",
               "--soc_version=Ascend910B1", "--precision_mode=force_fp32", "--input_shape=images:3,64,64")[0] == 0
    _, _, header, rows, summary = _compare(om_run, tmp_path, data / "retinanet.onnx", tmp_path / "r.om", "-i",
                                           str(tmp_path / "img.npy"))
    assert "first_divergent" not in summary and summary["matched_ratio"] >= 0.95
    assert summary["min_cosine"] >= 0.9999


def test_a_fused_asc_backend_s_outputs_are_matched_by_the_member_that_stores_them(atc, om_run, tmp_path):
    """A dynamically quantized Linear whose scale and bias fuse with the residual Add and the LayerNorm across a
    Reshape (one FusedAscBackend, two outputs of one size: the residual sum and the LayerNorm). Each output is the
    framework tensor its member's Store writes — matched by position they were swapped, and the residual Add came
    out first divergent (cosine 0.99) and its own error."""
    from tests.helpers.quantized_graphs import dynamic_linear_residual_layernorm
    m, feeds = dynamic_linear_residual_layernorm(np.random.default_rng(5))
    src = tmp_path / "dyn.onnx"
    onnx.save(m, src)
    np.save(tmp_path / "x.npy", feeds["x"])
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'dyn'}", "--soc_version=Ascend910B1",
               "--precision_mode=force_fp32")[0] == 0
    _, _, header, rows, summary = _compare(om_run, tmp_path, src, tmp_path / "dyn.om", "-i", str(tmp_path / "x.npy"))
    assert "first_divergent" not in summary
    by_node = {r[header.index("GroundTruth")]: r for r in rows}
    for node in ("residual_add", "layernorm"):
        row = by_node[node]
        assert row[header.index("OpType")] == "FusedAscBackend", row
        assert float(row[header.index("CosineSimilarity")]) > 0.99999, row


def test_a_rerun_takes_the_framework_tensor_each_input_is(atc, om_run, tmp_path):
    """--locat's rerun of the dynamically quantized Linear's ops. The int8 matmul reads the zero-point-centred int32
    operand a helper computed: no framework tensor is that (the uint8 one of the same size is not: rerun with it,
    the matmul came out 'own error', cosine 0.3). The FusedAscBackend takes the tensors its producers hold (the
    quantizer's scale, the int32 sums, the residual input), and matches."""
    from om_run.compare.golden import onnx_golden
    from om_run.compare.locate import locate
    from om_run.compare.match import Matcher
    from om_run.compare.om_side import OmKernels, load_entry, read_dumps
    from om_run.load.loader import load_model
    from tests.helpers.quantized_graphs import dynamic_linear_residual_layernorm
    m, feeds = dynamic_linear_residual_layernorm(np.random.default_rng(5))
    src = tmp_path / "dyn.onnx"
    onnx.save(m, src)
    np.save(tmp_path / "x.npy", feeds["x"])
    assert atc(f"--model={src}", "--framework=5", f"--output={tmp_path / 'dyn'}", "--soc_version=Ascend910B1",
               "--precision_mode=force_fp32")[0] == 0
    _, run, *_ = _compare(om_run, tmp_path, src, tmp_path / "dyn.om", "-i", str(tmp_path / "x.npy"))
    model = load_model(str(tmp_path / "dyn.om"))
    golden = onnx_golden(str(src), {"x": feeds["x"]}, [feeds["x"]])
    [root] = (run / "dump_data" / "npu").iterdir()
    kernels = OmKernels(model)
    matcher = Matcher(golden, read_dumps(str(root)), kernels, load_entry, 0.99)
    rows = {r.node.name: r for r in matcher.rows()}
    verdict, _ = locate(matcher, rows["matmul"], kernels)
    assert verdict.startswith("not located"), verdict
    verdict, cosine = locate(matcher, rows["residual_add"], kernels)
    assert verdict.startswith("inherited") and "x_scale, acc, x" in verdict and cosine > 0.99999, verdict
