"""Exported real models (tests/data/real_models, written by tools/real_models from torchvision, Hugging Face,
Keras 3 and tf-keras with random weights and tiny configs) compile and match their framework's outputs.

Error measure: max |om-run - framework| / max |framework| over each output.
* fp32 build (--precision_mode=must_keep_origin_dtype): at most 1e-3.
* default build (force_fp16): at most FP16_FACTOR (4) x what fp16 itself costs on that model, e16. e16 was
  measured when the fixture was written, by the framework's own runtime (onnxruntime for the ONNX exports,
  TensorFlow for the frozen graphs) running the model with every weight and every float activation rounded to
  fp16 — a Cast(fp16) -> Cast(fp32) pair after each op, so each op computes in fp32 on fp16-rounded operands
  (tools/real_models/common.py fp16_rounded_onnx, keras_models.fp16_rounded_graph) — and stored as emu16_K;
  it is taken as at least 2^-11 (fp16's rounding unit). The factor covers what storage rounding alone does
  not: the fp16 build also computes in fp16 (elementwise chains, softmax, reductions).
Each fixture compiles once per precision and runs once in om-run; no hazard may be reported."""
import pytest

from tools.real_models.report import (
    FP32_TOL,
    compile_and_run,
    fp16_tolerance,
    load,
    manifest,
    rel_err,
)

MANIFEST = manifest()
CASES = [pytest.param(name, precision, id=f"{name}-{precision}") for name in MANIFEST for precision in ("fp32", "fp16")]


def test_fixture_set_covers_the_issue():
    """Every model family the issue names is there, each ONNX one exported at opset 17 and at 18 (dynamo where
    the exporter takes it), Hugging Face with both attention implementations, Keras 3 and tf-keras alike."""
    names = set(MANIFEST)
    for base in ("resnet", "mobilenet_v3", "efficientnet", "regnet", "shufflenet_v2", "convnext", "vit", "swin",
                 "deeplabv3", "ssdlite_head"):
        assert f"tv_{base}.opset17" in names and ({f"tv_{base}.dynamo18", f"tv_{base}.opset18"} & names), base
    for base in ("bert", "gpt2", "llama", "t5_encoder", "vit", "whisper_encoder", "wav2vec2"):
        for attn in ("sdpa", "eager"):
            assert f"hf_{base}.{attn}.opset17" in names, (base, attn)
            assert {f"hf_{base}.{attn}.dynamo18", f"hf_{base}.{attn}.opset18"} & names, (base, attn)
    for flavour in ("keras3", "tf_keras"):
        for base in ("mha_encoder", "convnext", "unet", "conv1d_text", "regnet"):
            assert f"{flavour}_{base}" in names
    dynamo = [n for n in names if n.endswith("dynamo18")]
    assert len(dynamo) >= 20


@pytest.mark.parametrize("name,precision", CASES)
def test_real_model_matches_framework(name, precision):
    entry = MANIFEST[name]
    _, ref, emu16 = load(name, entry)
    outs, stats, _ = compile_and_run(name, entry, precision)
    assert stats.hazards == []
    assert len(outs) == len(ref)
    tol = FP32_TOL if precision == "fp32" else fp16_tolerance(emu16, ref)
    for got, exp in zip(outs, ref):
        assert got.shape == exp.shape
        assert rel_err(got, exp) <= tol, f"{name} {precision}: {rel_err(got, exp):.2e} > {tol:.2e}"


def test_slice_walking_back_past_index_zero():
    """TorchScript's pad reversal (Swin's F.pad): Slice(starts=-1, ends=-INT64_MAX, steps=-1) takes every row,
    last to first (it came out empty: Python's slice.indices says stop -1, which a slice reads as the end)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    import atc_py
    c = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    g = helper.make_graph([helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [c("s", [-1]), c("e", [-(2 ** 63) + 1]), c("a", [0]), c("st", [-1])])
    r = atc_py.build(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
                     {"ge.socVersion": "Ascend910B1"})
    assert r.graph.net_output.inputs[0].desc.shape == (4, 2)
