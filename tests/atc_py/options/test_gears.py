"""Gears: --dynamic_batch_size / --dynamic_image_size / --dynamic_dims build one .om holding a
Case over one static subgraph per gear, the ascend_mbatch_shape_data input, the gear list in the model's
attributes and MODEL_INOUT_INFO; om-run picks the gear (msame's --dymBatch / --dymHW / --dymDims, or the
inputs' shapes) and matches onnxruntime at that shape. ATC's flag checks give ATC's codes."""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import atc_py
from atc_py.om import partitions as pt
from atc_py.om import read_om
from atc_py.om.attrs import from_attr, to_attr
from atc_py.om.inout_info import (
    DESIGNATE_SHAPE_ORDER,
    DYNAMIC_BATCH,
    DYNAMIC_DIMS,
    DYNAMIC_OUTPUT_SHAPE,
    INPUT_DESC,
    parse_inout,
    parse_vector_block,
)
from atc_py.om.model_info import model_info
from atc_py.proto import ge_ir_pb2 as ge
from tests.helpers import MODELS, ROOT
from tests.helpers.om_files import edit

RNG = np.random.default_rng(170)
GEARS = MODELS / "gears"
SOC = "Ascend910B1"


@pytest.fixture(scope="module")
def conv_model(tmp_path_factory) -> tuple[str, onnx.ModelProto]:
    """Conv + BN-free relu + global pool + matmul head, batch and spatial size symbolic."""
    w = numpy_helper.from_array(RNG.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, "w")
    fc = numpy_helper.from_array(RNG.standard_normal((8, 5)).astype(np.float32) * 0.3, "fc")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]), helper.make_node("MatMul", ["f", "fc"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TP.FLOAT, ["N", 3, "H", "W"])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, ["N", 5])], [w, fc])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    p = tmp_path_factory.mktemp("gears") / "conv.onnx"
    onnx.save(m, str(p))
    return str(p), m


def compile_(atc, model, out, *extra, code=0):
    rc, stdout, _ = atc(f"--model={model}", "--framework=5", f"--output={out}", f"--soc_version={SOC}",
                        "--precision_mode=must_keep_origin_dtype", *extra)
    assert rc == code, stdout
    return f"{out}.om" if code == 0 else stdout


def run_against_ort(om_run, tmp_path, om, sess, feeds: dict, *flags):
    np.savez(tmp_path / "in.npz", **feeds)
    np.savez(tmp_path / "exp.npz", *sess.run(None, feeds))
    code, out, err = om_run("--model", om, "--input", str(tmp_path / "in.npz"), "--expected",
                            str(tmp_path / "exp.npz"), *flags)
    assert code == 0 and "PASS" in out and "FAIL" not in out, out + err
    return out


def test_batch_gears_run_each_gear_against_onnxruntime(atc, om_run, tmp_path, conv_model):
    path, m = conv_model
    om = compile_(atc, path, tmp_path / "b", "--input_shape=x:-1,3,16,16", "--dynamic_batch_size=1,2,4")
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 4):
        x = RNG.standard_normal((batch, 3, 16, 16)).astype(np.float32)
        out = run_against_ort(om_run, tmp_path, om, sess, {"x": x})          # gear from the input's shape
        assert f"gear {[1, 2, 4].index(batch)}: batch {batch}" in out
        out = run_against_ort(om_run, tmp_path, om, sess, {"x": x}, "--dymBatch", str(batch))
        assert f"output y: float32[{batch},5]" in out
    # wrong gear, wrong kind, a shape no gear has
    code, _, err = om_run("--model", om, "--dymBatch", "3")
    assert code == 1 and "E30002" in err and "1;2;4" in err
    code, _, err = om_run("--model", om, "--dymHW", "16,16")
    assert code == 1 and "E30002" in err and "--dymBatch" in err
    np.save(tmp_path / "x3.npy", RNG.standard_normal((3, 3, 16, 16)).astype(np.float32))
    code, _, err = om_run("--model", om, "--input", str(tmp_path / "x3.npy"))
    assert code == 1 and "E30002" in err and "no gear" in err


def test_image_size_gears_against_onnxruntime(atc, om_run, tmp_path, conv_model):
    path, m = conv_model
    om = compile_(atc, path, tmp_path / "hw", "--input_shape=x:2,3,-1,-1", "--dynamic_image_size=8,8;16,12")
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for h, w in ((8, 8), (16, 12)):
        x = RNG.standard_normal((2, 3, h, w)).astype(np.float32)
        out = run_against_ort(om_run, tmp_path, om, sess, {"x": x}, "--dymHW", f"{h},{w}")
        assert f"image size {h},{w}" in out
    code, _, err = om_run("--model", om, "--dymHW", "8,9")
    assert code == 1 and "E30002" in err


def test_dims_gears_bert_against_onnxruntime(atc, om_run, tmp_path):
    model = GEARS / "bert_tiny.onnx"
    om = compile_(atc, model, tmp_path / "bert", "--input_shape=input_ids:-1,-1;attention_mask:-1,-1",
                  "--dynamic_dims=1,16,1,16;2,32,2,32")
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    for b, s in ((1, 16), (2, 32)):
        mask = np.ones((b, s), np.int64)
        mask[:, -3:] = 0
        feeds = {"input_ids": RNG.integers(0, 100, (b, s)), "attention_mask": mask}
        run_against_ort(om_run, tmp_path, om, sess, feeds, "--dymDims", f"input_ids:{b},{s};attention_mask:{b},{s}")
    code, _, err = om_run("--model", om, "--dymDims", "input_ids:2,16;attention_mask:2,16")
    assert code == 1 and "E30002" in err and "no gear" in err


def _build(model, **options):
    opts = {"ge.socVersion": SOC, "ge.exec.precision_mode": "must_keep_origin_dtype", "om_name": "m", **options}
    return atc_py.build(str(model), opts)


def test_one_om_holds_every_gear_with_shared_memory_and_weights(conv_model):
    path, _ = conv_model
    res = _build(path, input_shape="x:-1,3,16,16", **{"ge.dynamicBatchSize": "1,2,4"})
    om = read_om(res.om)
    assert om.header.model_num == 1
    md = ge.ModelDef.FromString(om.models[0].get(pt.MODEL_DEF))
    root = md.graph[0]
    types = [op.type for op in root.op]
    assert types.count("Case") == 1 and "MapIndex" in types
    case = next(op for op in root.op if op.type == "Case")
    assert case.name == "ascend_mbatch_shape_case" and len(case.subgraph_name) == 3
    assert {g.name for g in md.graph[1:]} == set(case.subgraph_name)
    assert [op.name for op in root.op if op.type == "Data"] == ["x", "ascend_mbatch_shape_data"]
    attrs = {k: from_attr(v) for k, v in md.attr.items()}
    assert attrs["all_gears_info"] == "1;2;4" and attrs["mbatch_dynamic_type"] == 1 and attrs["batch_num"] == 3
    assert json.loads(attrs["_mbatch_output_shapes"]) == [[[1, 5]], [[2, 5]], [[4, 5]]]
    info = parse_inout(om.models[0].get(pt.MODEL_INOUT_INFO))
    x = info[INPUT_DESC][0]
    assert x.shape == (-1, 3, 16, 16) and x.size == 4 * 3 * 16 * 16 * 4     # sized for the largest gear
    assert parse_vector_block(info[DYNAMIC_BATCH]) == [[1], [2], [4]]
    assert parse_vector_block(info[DYNAMIC_OUTPUT_SHAPE])[2] == [2, 0, 4, 5]
    assert DESIGNATE_SHAPE_ORDER in info
    # memory: the branches share one arena, the largest gear's; weights are stored once
    largest = _build(path, input_shape="x:4,3,16,16")
    small = _build(path, input_shape="x:1,3,16,16")
    assert res.summary["memory_size"] < largest.summary["memory_size"] + small.summary["memory_size"]
    assert res.summary["weight_size"] <= largest.summary["weight_size"] + 1024


def test_dims_gears_inout_info_lists_the_dims(conv_model):
    path, _ = conv_model
    res = _build(path, input_shape="x:-1,3,-1,8", **{"ge.dynamicDims": "1,8;2,16"})
    info = parse_inout(read_om(res.om).models[0].get(pt.MODEL_INOUT_INFO))
    assert parse_vector_block(info[DYNAMIC_DIMS]) == [[1, 8], [2, 16]]
    assert info[INPUT_DESC][0].shape == (-1, 3, -1, 8)


def test_builds_are_deterministic(conv_model):
    path, _ = conv_model
    a = _build(path, input_shape="x:-1,3,16,16", **{"ge.dynamicBatchSize": "1,2"}).om
    b = _build(path, input_shape="x:-1,3,16,16", **{"ge.dynamicBatchSize": "1,2"}).om
    assert a == b


BAD_FLAGS = [
    (["--input_shape=x:-1,3,16,16", "--dynamic_batch_size=1,2", "--dynamic_image_size=8,8;16,16"], "E10009"),
    (["--input_shape_range=x:[-1,3,16,16]", "--dynamic_batch_size=1,2"], "E10009"),
    (["--dynamic_batch_size=1,2"], "E10004"),
    (["--input_shape=x:1,3,16,16", "--dynamic_batch_size=1,2"], "E10040"),
    (["--input_shape=x:1~4,3,16,16", "--dynamic_batch_size=1,2"], "E10040"),
    (["--input_shape=x:-1,3,16,16", "--dynamic_batch_size=1,a"], "E10003"),
    (["--input_shape=x:-1,3,16,16", "--dynamic_batch_size=4"], "E10035"),
    (["--input_shape=x:-1,3,16,16", "--dynamic_batch_size=" + ",".join(map(str, range(1, 102)))], "E10036"),
    (["--input_shape=x:-1,3,-1,-1", "--dynamic_dims=1,8,8;2,16"], "E10037"),
    (["--input_shape=x:-1,3,16,16", "--dynamic_batch_size=0,2"], "E10038"),
    (["--input_shape=x:-1,3,16,16", "--dynamic_batch_size=2,2"], "E10039"),
    (["--input_shape=x:1,3,-1,16", "--dynamic_batch_size=1,2"], "E10018"),
    (["--input_shape=x:-1,3,16,16", "--dynamic_image_size=8,8;16,16"], "E10019"),
    (["--input_shape=x:1,3,-1,-1", "--dynamic_image_size=8,8,8;16,16"], "E10020"),
    (["--input_shape=x:1,3,-1,-1", "--dynamic_image_size=8;16"], "E10020"),
    (["--input_shape=x:-1,3,-1,-1", "--dynamic_dims=1,8;2,16"], "E10003"),
    (["--input_shape=x:-1,3,16,16", "--dynamic_dims=1;2", f"--insert_op_conf={GEARS / 'vision_aipp.cfg'}"], "E10001"),
    (["--input_shape=x:-1,3,16,16", "--dynamic_batch_size=1,,2"], "E10003"),       # an empty gear is no gear
    (["--input_shape=x:-1,3,16,16", "--dynamic_batch_size=,1,2"], "E10003"),
    (["--input_shape=x:-1,3,16,16", "--dynamic_batch_size=1,2,,"], "E10003"),
    (["--input_shape=x:-1,3,-1,-1", "--dynamic_dims=1,8,8;;2,16,16"], "E10003"),
    (["--input_shape=x:-1,3,-1,-1", "--dynamic_dims=;1,8,8;2,16,16"], "E10003"),
    (["--input_shape=x:1,3,-1,-1", "--dynamic_image_size=8,8;;16,16"], "E10020"),
]


@pytest.mark.parametrize("flags,code", BAD_FLAGS, ids=[c + "-" + str(i) for i, (_, c) in enumerate(BAD_FLAGS)])
def test_bad_gear_flags_give_atcs_codes(atc, tmp_path, conv_model, flags, code):
    path, _ = conv_model
    out = compile_(atc, path, tmp_path / "bad", *flags, code=255)
    assert f"{code}:" in out and "Traceback" not in out
    assert not (tmp_path / "bad.om").exists()


@pytest.mark.parametrize("flags,words", [
    (["--dynamic_batch_size=1,,2"], "profile 2 is empty"),
    (["--input_shape=x:-1,3,-1,-1", "--dynamic_dims=1,8,8;;2,16,16"], "profile 2 is empty"),
])
def test_an_empty_gear_is_named(atc, tmp_path, conv_model, flags, words):
    path, _ = conv_model
    shape = [] if any(f.startswith("--input_shape") for f in flags) else ["--input_shape=x:-1,3,16,16"]
    out = compile_(atc, path, tmp_path / "bad", *shape, *flags, code=255)
    assert "E10003:" in out and words in out


def test_one_trailing_separator_is_dropped_as_atc_does(atc, tmp_path, conv_model):
    path, _ = conv_model
    compile_(atc, path, tmp_path / "b", "--input_shape=x:-1,3,16,16", "--dynamic_batch_size=1,2,")
    compile_(atc, path, tmp_path / "d", "--input_shape=x:-1,3,16,16", "--dynamic_dims=1;2;")
    assert (tmp_path / "b.om").is_file() and (tmp_path / "d.om").is_file()


def test_gears_of_a_dynamic_shape_model_are_refused(atc, tmp_path):
    g = helper.make_graph([helper.make_node("NonZero", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TP.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TP.INT64, None)])
    p = tmp_path / "nz.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(p))
    out = compile_(atc, p, tmp_path / "nz", "--input_shape=x:-1,4", "--dynamic_batch_size=1,2", code=255)
    assert "E10055" in out and not (tmp_path / "nz.om").exists()


def test_msame_bin_round_trip_at_a_gear(atc, om_run, tmp_path, conv_model):
    path, m = conv_model
    om = compile_(atc, path, tmp_path / "b", "--input_shape=x:-1,3,16,16", "--dynamic_batch_size=1,2,4")
    x = RNG.standard_normal((2, 3, 16, 16)).astype(np.float32)
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    code, out, err = om_run("--model", om, "--input", str(tmp_path / "x.bin"), "--dymBatch", "2", "--output",
                            str(tmp_path / "out"), "--outfmt", "BIN")
    assert code == 0, out + err
    got = np.frombuffer((tmp_path / "out" / "m_output_0.bin").read_bytes() if (tmp_path / "out" / "m_output_0.bin").exists()
                        else next((tmp_path / "out").glob("*_output_0.bin")).read_bytes(), np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got.size == 10 and np.allclose(got.reshape(2, 5), want, atol=1e-4)
    (tmp_path / "bad.bin").write_bytes(x[:1].tobytes())          # a batch-1 file for gear 2
    code, _, err = om_run("--model", om, "--input", str(tmp_path / "bad.bin"), "--dymBatch", "2")
    assert code == 1 and "E30002" in err


@pytest.mark.parametrize("mutate,expect", [
    (lambda a: a.__setitem__("all_gears_info", to_attr("1;x")), "gear list"),
    (lambda a: a.__setitem__("mbatch_dynamic_type", to_attr(7)), "gear kind"),
    (lambda a: a.__setitem__("_mbatch_input_shapes", to_attr("[[[1000,3,16,16]],[[2,3,16,16]],[[4,3,16,16]]]")),
     "does not fit"),
    (lambda a: a.__setitem__("_mbatch_output_shapes", to_attr("[[[1,5]]]")), "for each of the 3 gears"),
    (lambda a: a.__setitem__("_mbatch_input_shapes", to_attr("not json")), "not JSON"),
])
def test_hostile_gear_tables_are_refused(atc, om_run, tmp_path, conv_model, mutate, expect):
    path, _ = conv_model
    om = compile_(atc, path, tmp_path / "b", "--input_shape=x:-1,3,16,16", "--dynamic_batch_size=1,2,4")

    def change(md):
        attrs = dict(md.attr)
        mutate(attrs)
        for k, v in attrs.items():
            md.attr[k].CopyFrom(v)
    bad = tmp_path / "bad.om"
    bad.write_bytes(edit(open(om, "rb").read(), model_def=change))
    code, _, err = om_run("--model", str(bad), "--dymBatch", "2")
    assert code == 1 and "E30001" in err and expect in err, err


def _gear_data(tmp_path):
    spec = importlib.util.spec_from_file_location("make_gear_models", MODELS / "make_gear_models.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.write_data(tmp_path)
    return mod


def test_done_means_vision_aipp_dynamic_batch_and_bert_dynamic_dims(atc, om_run, tmp_path):
    """The two deployments of docs/deployment.md: each compiles to one .om and runs at every gear with
    onnxruntime's numbers (default precision, so om-run's fp16 tolerance)."""
    mod = _gear_data(tmp_path)
    rc, out, _ = atc(f"--model={GEARS / 'vision_net.onnx'}", "--framework=5", f"--output={tmp_path / 'vision'}",
                     f"--soc_version={SOC}", "--input_shape=image:-1,3,224,224", "--dynamic_batch_size=1,2,4",
                     f"--insert_op_conf={GEARS / 'vision_aipp.cfg'}")
    assert rc == 0, out
    for b in mod.VISION_BATCHES:
        code, out, err = om_run(str(tmp_path / "vision.om"), "--input", str(tmp_path / f"vision_net.b{b}.inputs.npz"),
                                "--expected", str(tmp_path / f"vision_net.b{b}.expected.npz"))
        assert code == 0 and "PASS" in out and f"batch {b}" in out, out + err
    rc, out, _ = atc(f"--model={GEARS / 'bert_tiny.onnx'}", "--framework=5", f"--output={tmp_path / 'bert'}",
                     f"--soc_version={SOC}", "--input_shape=input_ids:-1,-1;attention_mask:-1,-1",
                     "--dynamic_dims=" + ";".join(f"{b},{s},{b},{s}" for b, s in mod.BERT_GEARS))
    assert rc == 0, out
    for b, s in mod.BERT_GEARS:
        code, out, err = om_run(str(tmp_path / "bert.om"), "--input", str(tmp_path / f"bert_tiny.b{b}s{s}.inputs.npz"),
                                "--expected", str(tmp_path / f"bert_tiny.b{b}s{s}.expected.npz"))
        assert code == 0 and out.count("PASS") == 2, out + err


def test_golden_mode6_of_a_gear_model(update_golden):
    """--mode=6 of the vision deployment (AIPP + dynamic batch): inputs with -1, the gears and their shapes."""
    res = atc_py.build(str(GEARS / "vision_net.onnx"), {
        "ge.socVersion": SOC, "om_name": "vision_net", "input_shape": "image:-1,3,224,224",
        "ge.dynamicBatchSize": "1,2,4", "insert_op_conf": str(GEARS / "vision_aipp.cfg")})
    text = model_info(read_om(res.om)) + "\n"
    path = ROOT / "tests" / "golden" / "vision_net.gears.mode6.txt"
    if update_golden:
        path.write_text(text)
    assert "gear 2  : 4: inputs [4,224,224,3]" in text and "DT_UINT8[-1,224,224,3]" in text
    assert path.exists(), f"{path} is missing: run `make golden`"
    assert text == path.read_text(), f"{path.name} changed: review, then `make golden`"
