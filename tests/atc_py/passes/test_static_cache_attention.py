"""The static-cache attention recogniser (passes/static_cache_attention.py, attention_mask.py): each mask form exporters
write lowers to IncreFlashAttention with sunk tiling and decodes to the tokens of the unfused build and of
onnxruntime; a mask that is not provably the same attention stays unfused with its reason in the build summary."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.om import task_types as tt
from om_run.load.loader import load_model
from om_run.sim.execute import execute
from tests.helpers.decoders import (
    NEW,
    PROMPT,
    SHAPE,
    compile_decoder,
    prompt_file,
    replace_initializer,
    shift_mask_position,
    static_decoder,
    static_shape,
)
from tools.kv_decoder import greedy_reference

FORMS = [   # (mask, scale, masked value; float32's lowest when None): accepted
    ("one_minus", "mul", None),
    ("one_minus", "mul_before", None),
    ("one_minus", "div_before", None),
    ("less", "div", None),
    ("greater", "mul", -1e9),
    ("where", "mul_before", None),
    ("where", "mul", -65504.0),
]


def _tokens(om_run, om, tmp_path, name):
    code, out, err = om_run("--model", str(om), "--input", str(prompt_file(tmp_path)), "--generate", str(NEW),
                            "--output", str(tmp_path / name))
    assert code == 0, out + err
    return np.load(tmp_path / name / "tokens.npy")


def _build(model, precision="force_fp32", sink="1"):
    opts = {"ge.socVersion": "Ascend910B1", "input_shape": static_shape(), "ge.tiling_schedule_optimize": sink}
    if precision:
        opts["ge.exec.precision_mode"] = precision
    return atc_py.build(model, opts)


@pytest.mark.parametrize("mask,scale,low", FORMS, ids=[f"{m}-{s}-{lo}" for m, s, lo in FORMS])
def test_each_mask_form_lowers_and_decodes_to_the_unfused_and_onnxruntime_tokens(mask, scale, low, atc, om_run,
                                                                                   tmp_path):
    model = static_decoder(mask, scale, low)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = greedy_reference(sess, "static", SHAPE, PROMPT, NEW)
    (tmp_path / "ifa").mkdir()
    (tmp_path / "plain").mkdir()
    fused, _ = compile_decoder(atc, tmp_path / "ifa", "static", model=model, extra=("--tiling_schedule_optimize=1",))
    plain, _ = compile_decoder(atc, tmp_path / "plain", "static", model=model)
    loaded = load_model(str(fused))
    kinds = [t.type for t in loaded.tasks]
    assert kinds.count(tt.PREPROCESS_KERNEL) == SHAPE.layers and kinds.count(tt.UPDATE) == SHAPE.layers
    types = [op.type for op in loaded.ops.values()]
    assert types.count("IncreFlashAttention") == SHAPE.layers and "SoftmaxV2" not in types
    assert "IncreFlashAttention" not in {op.type for op in load_model(str(plain)).ops.values()}
    got = _tokens(om_run, fused, tmp_path, "ifa_tokens")
    np.testing.assert_array_equal(got, _tokens(om_run, plain, tmp_path, "plain_tokens"))
    np.testing.assert_array_equal(got, expected)


def test_the_scale_goes_to_incre_flash_attention_wherever_the_model_applies_it():
    """Mul by 1/sqrt(d) or Div by sqrt(d), on the scores or on the masked sum: IFA's scale_value is 1/sqrt(d)."""
    for scale in ("mul", "div", "mul_before", "div_before"):
        res = _build(static_decoder("one_minus", scale))
        (value,) = {n.attrs["scale_value"] for n in res.graph.nodes if n.op_type == "IncreFlashAttention"}
        assert value == pytest.approx(1 / np.sqrt(SHAPE.head_dim), rel=1e-6), scale


def test_minus_inf_is_a_mask_where_it_is_selected_not_where_it_is_multiplied():
    """Where(seen, 0, -inf) gives 0 or -inf; (1 - valid) * -inf gives 0 x -inf = NaN for the attended keys."""
    assert _build(static_decoder("where", "mul", -np.inf)).summary["static_cache_attention"] == SHAPE.layers
    res = _build(static_decoder("one_minus", "mul", -np.inf))
    assert res.summary["static_cache_attention"] == 0 and len(res.summary["static_cache_attention_unfused"]) == 2


def test_the_default_fp16_build_lowers_additive_masks_added_after_the_scale():
    """fp16 saturates float32's lowest to -65504: (1 - valid) * -65504 is -0 or -65504, still "not attended"."""
    for mask in ("one_minus", "less", "greater"):
        res = _build(static_decoder(mask, "div"), precision=None)
        assert res.summary["static_cache_attention"] == SHAPE.layers, res.summary["static_cache_attention_unfused"]
        assert res.summary["static_cache_attention_unfused"] == []


REJECTED = [   # (model, precision, words of the reason)
    (lambda: static_decoder("where", "mul", -10000.0), "force_fp32",
     "masked positions get -10000 in float32: their weight is 0 only while their score is less than 9896 above"),
    (lambda: static_decoder("where", "mul", -10000.0), None,
     "masked positions get -10000 in float16: their weight is 0 only while their score is less than 9983 above"),
    (lambda: static_decoder("one_minus", "mul", -np.inf), "force_fp32", "attended positions get NaN in float32"),
    (lambda: static_decoder("greater", "mul", -np.inf), "force_fp32", "attended positions get NaN in float32"),
    (lambda: static_decoder("one_minus", "mul_before"), None,
     "masked positions get -16376 after Mul by 0.25 in float16"),
    (lambda: replace_initializer(static_decoder("one_minus", "mul_before"), "attn_scale",
                                 np.array(-0.25, np.float32)), "force_fp32", "the masked scores are scaled by -0.25"),
    (lambda: shift_mask_position(static_decoder(), 1), "force_fp32",
     "the mask admits positions beyond the current one (keys up to position + 1)"),
    (lambda: shift_mask_position(static_decoder(), -1), "force_fp32",
     "the mask hides the current position (keys up to position - 1)"),
    (lambda: replace_initializer(static_decoder(), "cache_range", np.arange(16, dtype=np.int64)[::-1].copy()),
     "force_fp32", "compares the position against constants that are not arange(16)"),
    (lambda: replace_initializer(static_decoder(), "zero_f", np.array(-1.0, np.float32)), "force_fp32",
     "attended positions get -1 in float32, not 0"),
]


@pytest.mark.parametrize("k", range(len(REJECTED)))
def test_masks_not_provably_the_same_attention_stay_unfused_with_the_reason(k):
    make, precision, reason = REJECTED[k]
    res = _build(make(), precision=precision)
    assert res.summary["static_cache_attention"] == 0
    assert not any(n.op_type == "IncreFlashAttention" for n in res.graph.nodes)
    unfused = res.summary["static_cache_attention_unfused"]
    assert [u["node"] for u in unfused] == [f"_model_layers.{i}_self_attn_Softmax" for i in range(SHAPE.layers)]
    assert all(reason in u["reason"] for u in unfused), unfused


def test_the_build_log_has_one_line_per_unfused_attention(atc, tmp_path):
    (tmp_path / "bert").mkdir()
    _, out = _compile_cli(atc, tmp_path / "bert", static_decoder("where", "mul", -10000.0))
    lines = [ln for ln in out.splitlines() if "left unfused" in ln]
    assert lines == [f"[INFO] build summary: static-cache attention _model_layers.{i}_self_attn_Softmax left unfused: "
                     "masked positions get -10000 in float32: their weight is 0 only while their score is less than "
                     "9896 above the attended ones (a mask must be -inf or at most -65504)"
                     for i in range(SHAPE.layers)]
    assert "static-cache attentions lowered" not in out
    _, out = _compile_cli(atc, tmp_path, static_decoder("one_minus", "mul"))
    assert "left unfused" not in out and "static-cache attentions lowered to IncreFlashAttention 2" in out


def test_without_the_option_nothing_is_reported():
    res = _build(static_decoder("where", "mul", -10000.0), sink="0")
    assert "static_cache_attention_unfused" not in res.summary


def _compile_cli(atc, where, model):
    src = where / "m.onnx"
    src.write_bytes(model.SerializeToString())
    code, out, err = atc(f"--model={src}", "--framework=5", f"--output={where / 'm'}", "--soc_version=Ascend910B1",
                         "--precision_mode=force_fp32", f"--input_shape={static_shape()}",
                         "--tiling_schedule_optimize=1")
    assert code == 0, out + err
    return where / "m.om", out


# -- why a finite mask must be at most -65504: a score gap BERT's -10000 lets through ---------------------------
S, D = 8, 4


def _attention(low: float | None):
    """softmax(Q K^T / 2 + mask) V for one query over an [1,1,S,D] cache; the mask Where(keys <= position, 0, low),
    or the input `mask` itself when low is None."""
    nd = helper.make_node
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "scale")]
    nodes = [nd("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), nd("MatMul", ["q", "kt"], ["qk"]),
             nd("Mul", ["qk", "scale"], ["scores"]), nd("Add", ["scores", "mask"], ["logits"]),
             nd("Softmax", ["logits"], ["p"], name="softmax", axis=-1), nd("MatMul", ["p", "v"], ["y"])]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
              for n, s in (("q", [1, 1, 1, D]), ("k", [1, 1, S, D]), ("v", [1, 1, S, D]))]
    if low is None:
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 1, S]))
    else:
        inputs.append(helper.make_tensor_value_info("position", TensorProto.INT64, [1, 1, 1]))
        inits += [numpy_helper.from_array(np.arange(S, dtype=np.int64), "keys"),
                  numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
                  numpy_helper.from_array(np.array(low, np.float32), "low")]
        nodes = [nd("LessOrEqual", ["keys", "position"], ["seen"]), nd("Where", ["seen", "zero", "low"], ["m3"]),
                 nd("Unsqueeze", ["m3", "axis1"], ["mask"])] + nodes
        inits.append(numpy_helper.from_array(np.array([1], np.int64), "axis1"))
    g = helper.make_graph(nodes, "attention", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                                     [1, 1, 1, D])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _gap_feeds(gap: float):
    """Position 2; the key at position 5 (masked) scores `gap` above the attended ones, which score 0."""
    q = np.zeros((1, 1, 1, D), np.float32)
    q[..., 0] = 1.0
    k = np.zeros((1, 1, S, D), np.float32)
    k[0, 0, 5, 0] = 2 * gap                       # the scale is 1/2
    v = np.arange(S * D, dtype=np.float32).reshape(1, 1, S, D)
    return {"q": q, "k": k, "v": v, "position": np.array([[[2]]], np.int64)}


def _run(model, feeds, tmp_path, name):
    res = atc_py.build(model, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "force_fp32",
                               "ge.tiling_schedule_optimize": "1"})
    path = tmp_path / f"{name}.om"
    path.write_bytes(res.om)
    loaded = load_model(str(path))
    (y,) = execute(loaded, [feeds[io.name] for io in loaded.inputs])
    return res, y


def test_minus_65504_masks_a_score_gap_that_minus_10000_lets_through(tmp_path):
    """A masked key scoring 10100 above the attended ones: -65504 still gives it weight 0 (the model is attention over
    keys 0..position, and lowers to IFA); -10000 gives it nearly all the weight, so the model is another attention
    than IFA's, and stays unfused (its build gives onnxruntime's numbers)."""
    feeds = _gap_feeds(10100.0)
    length_masked = feeds["v"][0, 0, :3].mean(axis=0)       # scores 0 over keys 0..2: their mean value
    for low, lowered in ((-65504.0, True), (-10000.0, False)):
        model = _attention(low)
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        (ref,) = sess.run(None, feeds)
        res, y = _run(model, feeds, tmp_path, f"low{-low:.0f}")
        assert res.summary["static_cache_attention"] == int(lowered)
        np.testing.assert_allclose(y, ref, rtol=1e-5)
        assert np.allclose(ref[0, 0, 0], length_masked) is lowered


def test_a_mask_given_as_an_input_is_not_a_function_of_the_position():
    res = atc_py.build(_attention(None), {"ge.socVersion": "Ascend910B1", "ge.tiling_schedule_optimize": "1"})
    assert res.summary["static_cache_attention"] == 0
    assert res.summary["static_cache_attention_unfused"] == [
        {"node": "softmax", "reason": "the mask is the input mask, not a function of the position against arange(8)"}]
