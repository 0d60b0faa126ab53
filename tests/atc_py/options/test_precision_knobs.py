"""ATC's precision and fusion knobs: --input_fp16_nodes, --keep_dtype, --modify_mixlist,
--precision_mode_v2, --op_select_implmode (+ --optypelist_for_implmode), --fusion_switch_file — each with its
effect, its bad values' ATC codes, and its record in the .om."""
from __future__ import annotations

import json

import numpy as np
import pytest

import atc_py
from atc_py.common.errors import AtcError
from tests.helpers.precision_models import (
    APART,
    SOC,
    conv_bn_model,
    conv_model,
    dtypes,
    model_attrs,
)

RNG = np.random.default_rng(29)



def test_input_fp16_nodes_feed_the_input_as_fp16(tmp_path):
    res = atc_py.build(conv_model(), {**SOC, "input_fp16_nodes": "x", "ge.exec.precision_mode": "must_keep_origin_dtype"})
    assert res.graph.data_nodes[0].outputs[0].desc.dtype == "float16"
    assert model_attrs(res)["input_fp16_nodes"] == "x"
    for bad, code in (("nosuch", "E10016"), ("conv", "E10017")):
        with pytest.raises(AtcError) as e:
            atc_py.build(conv_model(), {**SOC, "input_fp16_nodes": bad})
        assert e.value.code == code


def test_keep_dtype_keeps_named_nodes_and_op_types_in_fp32(tmp_path):
    base = dtypes(atc_py.build(conv_model(), APART))
    assert base["act"] == "float16" and base["sm"] == "float16"
    f = tmp_path / "keep.cfg"
    f.write_text("act\nOpType::SoftmaxV2\n")
    res = atc_py.build(conv_model(), {**APART, "keep_dtype": str(f)})
    kept = dtypes(res)
    assert kept["act"] == "float32" and kept["sm"] == "float32" and kept["conv"] == "float16"
    assert model_attrs(res)["keep_dtype"] == ["act", "sm"]
    f.write_text("nosuch\n")
    with pytest.raises(AtcError, match="E10016"):
        atc_py.build(conv_model(), {**SOC, "keep_dtype": str(f)})
    with pytest.raises(AtcError, match="keep_dtype is not found"):
        atc_py.build(conv_model(), {**SOC, "keep_dtype": str(tmp_path / "missing.cfg")})


def test_modify_mixlist_edits_allow_mix_precision(tmp_path):
    mix = {"ge.exec.precision_mode": "allow_mix_precision"}
    assert dtypes(atc_py.build(conv_model(), {**APART, **mix}))["act"] == "float16"   # gray follows the conv
    f = tmp_path / "mix.json"
    f.write_text(json.dumps({"black-list": {"to-add": ["Sigmoid"]}}))
    res = atc_py.build(conv_model(), {**APART, **mix, "modify_mixlist": str(f)})
    got = dtypes(res)
    assert got["conv"] == "float16" and got["act"] == "float32"
    assert json.loads(model_attrs(res)["modify_mixlist"]) == {"black-list": {"to-add": ["Sigmoid"]}}
    f.write_text(json.dumps({"white-list": {"to-remove": ["Conv2D"]}}))
    assert dtypes(atc_py.build(conv_model(), {**APART, **mix, "modify_mixlist": str(f)}))["conv"] == "float32"
    for bad in ({"blue-list": {}}, {"white-list": {"to-add": "Conv2D"}},
                {"white-list": {"to-add": ["Relu"]}, "black-list": {"to-add": ["Relu"]}}):
        f.write_text(json.dumps(bad))
        with pytest.raises(AtcError, match="E10001.*modify_mixlist"):
            atc_py.build(conv_model(), {**SOC, **mix, "modify_mixlist": str(f)})
    f.write_text("{}")
    with pytest.raises(AtcError, match="only with --precision_mode=allow_mix_precision"):
        atc_py.build(conv_model(), {**SOC, "modify_mixlist": str(f)})


def test_precision_mode_v2(tmp_path):
    res = atc_py.build(conv_model(), {**SOC, "ge.exec.precision_mode_v2": "origin"})
    assert set(dtypes(res).values()) == {"float32"} and model_attrs(res)["precision_mode"] == "must_keep_origin_dtype"
    with pytest.raises(AtcError, match="E10056"):
        atc_py.build(conv_model(), {**SOC, "ge.exec.precision_mode_v2": "fp16", "ge.exec.precision_mode": "force_fp16"})
    with pytest.raises(AtcError, match="E10001.*precision_mode_v2"):
        atc_py.build(conv_model(), {**SOC, "ge.exec.precision_mode_v2": "cube_hif8"})


def test_op_select_implmode_is_recorded(tmp_path):
    res = atc_py.build(conv_model(), {**APART, "op_select_implmode": "high_precision",
                                      "optypelist_for_implmode": "Sigmoid"})
    assert model_attrs(res)["op_select_implmode"] == "high_precision"
    assert res.graph.node("act").attrs["_op_impl_mode"] == "high_precision" and "_op_impl_mode" not in \
        res.graph.node("sm").attrs
    with pytest.raises(AtcError, match="must be set at the same time"):
        atc_py.build(conv_model(), {**SOC, "optypelist_for_implmode": "Sigmoid"})
    with pytest.raises(AtcError, match="E10001.*op_select_implmode"):
        atc_py.build(conv_model(), {**SOC, "op_select_implmode": "fastest"})


def test_fusion_switch_file_maps_ge_pass_names(tmp_path):
    m = conv_bn_model()
    assert atc_py.build(m, SOC).summary["bn_folded_into_conv"] == 1
    f = tmp_path / "fusion.json"
    f.write_text(json.dumps({"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": "off"}}}))
    res = atc_py.build(m, {**SOC, "fusion_switch_file": str(f)})
    assert res.summary["bn_folded_into_conv"] == 0 and json.loads(model_attrs(res)["fusion_switch_file"]) == \
        {"bn_conv_fold": False}
    f.write_text(json.dumps({"Switch": {"GraphFusion": {"ALL": "maybe"}}}))
    with pytest.raises(AtcError, match="E10001.*fusion_switch_file"):
        atc_py.build(m, {**SOC, "fusion_switch_file": str(f)})


@pytest.mark.parametrize("mode", ["allow_mix_precision_bf16", "allow_fp32_to_bf16"])
def test_bf16_precision_modes(tmp_path, mode):
    """The cube (and, mixed, the ops following it) compute in bfloat16; numbers within what bf16 costs."""
    import onnxruntime as ort

    from om_run.load.loader import load_model
    from om_run.sim.host import Simulation
    m = conv_model()
    res = atc_py.build(m, {**APART, "ge.exec.precision_mode": mode})
    from atc_py.ops import get_op
    got = dtypes(res)
    follows = mode.startswith("allow_mix") and "bfloat16" in get_op("Sigmoid").dtypes   # gray ops whose kernel takes bf16
    assert got["conv"] == "bfloat16" and got["act"] == ("bfloat16" if follows else "float32")
    p = tmp_path / "m.om"
    p.write_bytes(res.om)
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    y = Simulation(load_model(str(p))).run([x])[0][0]
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(y, want, rtol=5e-2, atol=5e-2)
    assert model_attrs(res)["precision_mode"] == mode
