"""Dev-only generator of tests/data/quantized/: models quantized by onnxruntime.quantization, with onnxruntime's own
outputs. Two families:

* QOperator: real-model fixtures (tests/data/real_models) quantized statically in the QOperator format —
  QLinearConv / QLinearMatMul and onnxruntime's com.microsoft contrib ops (QLinearAdd, QLinearMul, QLinearSigmoid,
  QLinearGlobalAveragePool, QLinearConcat, QLinearSoftmax, QGemm). Needs only onnxruntime (in the test venv):

      python -m tools.real_models.quantized_models

* stand-ins (quantized_standins.py: RepVGG, LR-ASPP MobileNetV3, DeiT, ALBERT) exported from PyTorch, then
  quantized statically in the QDQ format (QuantizeLinear / DequantizeLinear around float ops) or dynamically
  (DynamicQuantizeLinear + MatMulInteger + the scale Mul; pre-processed by quant_pre_process first, as
  onnxruntime's docs advise). Needs the dev venv (torch, torchvision, transformers):

      python -m tools.real_models.quantized_models --standins [NAME ...]

  Their files are converted to opset 21 after quantization (the same QuantizeLinear / DequantizeLinear semantics;
  onnx's reference evaluator implements DequantizeLinear from opset 19 only), so onnx.reference, onnxruntime and
  atc-py all read the one file.

Static quantization as onnxruntime's docs show it: calibrated on the fixture's saved input and a half-scaled copy,
per-channel int8 weights and uint8 activations, reduce_range (7-bit weights: onnxruntime's advice for CPUs without
VNNI, where its u8s8 kernels would otherwise saturate int16 pair sums and its outputs would depend on the CPU);
dynamic quantization with int8 weights, reduce_range too. Each NAME.onnx comes with NAME.npz (in_K, and out_K:
onnxruntime's outputs, all graph optimizations on: the fused int8 kernels users run) and its manifest.json entry."""
from __future__ import annotations

import json
import pathlib
import sys
import tempfile
from collections import Counter

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = ROOT / "tests" / "data" / "real_models"
OUT = ROOT / "tests" / "data" / "quantized"
# the families whose QOperator graphs use every contrib op the quantizer writes for CNNs and transformers
MODELS = ("tv_mobilenet_v3.opset17", "tv_efficientnet.opset17", "tv_shufflenet_v2.opset17", "hf_vit.sdpa.opset17",
          "hf_bert.sdpa.opset17")
STATIC_SETTINGS = "per-channel int8 weights, uint8 activations, reduce_range, MinMax on the saved input and a variant"


def calibration(inputs: dict) -> list[dict]:
    """The saved input, and a variant: float inputs halved, token ids permuted (masks kept)."""
    rng = np.random.default_rng(0)
    other = {}
    for k, v in inputs.items():
        if v.dtype.kind == "f":
            other[k] = (v * 0.5).astype(v.dtype)
        elif "mask" in k:
            other[k] = v
        else:
            other[k] = rng.permutation(v.reshape(-1)).reshape(v.shape)
    return [inputs, other]


def quantize_static_as(src: str, target: str, inputs: dict, fmt) -> None:
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantType, quantize_static
    batches = iter(calibration(inputs))

    class Reader(CalibrationDataReader):
        def get_next(self):
            return next(batches, None)
    quantize_static(src, target, Reader(), quant_format=fmt, per_channel=True, weight_type=QuantType.QInt8,
                    activation_type=QuantType.QUInt8, reduce_range=True, calibrate_method=CalibrationMethod.MinMax)


def save(name: str, target: pathlib.Path, inputs: dict, meta: dict) -> None:
    """NAME.npz with onnxruntime's outputs of the quantized model, and NAME's manifest entry (others kept)."""
    import onnx
    import onnxruntime as ort
    model = onnx.load(str(target))
    sess = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    outs = sess.run(None, inputs)
    np.savez_compressed(OUT / f"{name}.npz", **{f"in_{k}": v for k, v in enumerate(inputs.values())},
                        **{f"out_{k}": v for k, v in enumerate(outs)})
    ops = Counter(f"{n.domain}:{n.op_type}" if n.domain else n.op_type for n in model.graph.node)
    manifest = OUT / "manifest.json"
    entries = json.loads(manifest.read_text()) if manifest.exists() else {}
    entries[name] = {
        "file": target.name, "framework": "onnx", **meta, "inputs": list(inputs),
        "outputs": [o.name for o in sess.get_outputs()],
        "contrib_ops": sorted(k.split(":", 1)[1] for k in ops if k.startswith("com.microsoft:"))}
    manifest.write_text(json.dumps(dict(sorted(entries.items())), indent=1) + "\n")
    size = target.stat().st_size + (OUT / f"{name}.npz").stat().st_size
    print(f"{name}: {size / 1024:.0f} KiB, {dict(sorted(ops.items()))}", flush=True)


def quantize(name: str) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantFormat
    entry = json.loads((SOURCES / "manifest.json").read_text())[name]
    saved = np.load(SOURCES / f"{name}.npz")
    inputs = {n: saved[f"in_{k}"] for k, n in enumerate(entry["inputs"])}
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / f"{name}.qop.onnx"
    quantize_static_as(str(SOURCES / entry["file"]), str(target), inputs, QuantFormat.QOperator)
    save(f"{name}.qop", target, inputs, {
        "format": "QOperator", "source": f"{name} ({entry['source']})",
        "quantizer": f"onnxruntime {ort.__version__} quantize_static QOperator, {STATIC_SETTINGS}"})


def quantize_standin(base: str) -> None:
    """A stand-in of quantized_standins.py exported, quantized (QDQ or dynamic), converted to opset 21."""
    import onnx
    import onnxruntime as ort
    from onnx import version_converter
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from .quantized_standins import DYNAMIC, STATIC, float_model
    static = base in STATIC
    data, arrays, in_names, _ = float_model(STATIC[base] if static else DYNAMIC[base])
    inputs = dict(zip(in_names, arrays))
    name = f"{base}.{'qdq' if static else 'dyn'}"
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / f"{name}.onnx"
    with tempfile.TemporaryDirectory() as d:
        src = pathlib.Path(d) / "float.onnx"
        src.write_bytes(data)
        if static:
            quantize_static_as(str(src), str(target), inputs, QuantFormat.QDQ)
            how = f"quantize_static QDQ, {STATIC_SETTINGS}"
        else:
            # onnxruntime's advised first step: shapes inferred, Identity nodes and constant chains folded (ALBERT's
            # shared weights reach every layer's MatMul through an Identity, which the quantizer would leave
            # float), MatMul + Add on 3-D activations made Reshape, Gemm, Reshape (the CNNs are exported clean:
            # pre-processed, their HardSwish would become HardSigmoid and Mul)
            quant_pre_process(str(src), str(src))
            quantize_dynamic(str(src), str(target), weight_type=QuantType.QInt8, reduce_range=True)
            how = "quant_pre_process, quantize_dynamic, int8 weights per tensor, reduce_range"
    model = version_converter.convert_version(onnx.load(str(target)), 21)
    model.ir_version = 10
    onnx.save(model, str(target))
    kind = "torchvision" if base.startswith("tv_") else "transformers" if base.startswith("hf_") else "PyTorch"
    save(name, target, inputs, {
        "format": "QDQ" if static else "dynamic",
        "source": f"{kind} {base.split('_', 1)[-1]} (random weights, tiny config; tools/real_models/"
                  "quantized_standins.py)",
        "quantizer": f"onnxruntime {ort.__version__} {how}; opset 21"})


def main(argv: list[str]) -> None:
    if argv[:1] == ["--standins"]:
        from .quantized_standins import DYNAMIC, STATIC
        for base in [*STATIC, *DYNAMIC]:
            if len(argv) == 1 or base in argv[1:]:
                quantize_standin(base)
        return
    for name in MODELS:
        quantize(name)


if __name__ == "__main__":
    main(sys.argv[1:])
