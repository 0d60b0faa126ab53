"""Dev-only generator of tests/data/quantized/: real-model fixtures (tests/data/real_models) quantized by
onnxruntime.quantization in the QOperator format — QLinearConv / QLinearMatMul and onnxruntime's com.microsoft
contrib ops (QLinearAdd, QLinearMul, QLinearSigmoid, QLinearGlobalAveragePool, QLinearConcat, QLinearSoftmax,
QGemm) — with onnxruntime's own outputs. Needs only onnxruntime (in the test venv):

    python -m tools.real_models.quantized_models

Static quantization as its docs show it: calibrated on the fixture's saved input and a half-scaled copy, per-channel
int8 weights and uint8 activations, reduce_range (7-bit weights: onnxruntime's advice for CPUs without VNNI, where
its u8s8 kernels would otherwise saturate int16 pair sums). Each NAME.qop.onnx comes with NAME.qop.npz (in_K, and
out_K: onnxruntime's outputs) and its manifest.json entry."""
from __future__ import annotations

import json
import pathlib
from collections import Counter

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = ROOT / "tests" / "data" / "real_models"
OUT = ROOT / "tests" / "data" / "quantized"
# the families whose QOperator graphs use every contrib op the quantizer writes for CNNs and transformers
MODELS = ("tv_mobilenet_v3.opset17", "tv_efficientnet.opset17", "tv_shufflenet_v2.opset17", "hf_vit.sdpa.opset17",
          "hf_bert.sdpa.opset17")


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


def quantize(name: str) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    entry = json.loads((SOURCES / "manifest.json").read_text())[name]
    saved = np.load(SOURCES / f"{name}.npz")
    inputs = {n: saved[f"in_{k}"] for k, n in enumerate(entry["inputs"])}
    batches = iter(calibration(inputs))

    class Reader(CalibrationDataReader):
        def get_next(self):
            return next(batches, None)
    settings = dict(quant_format=QuantFormat.QOperator, per_channel=True, weight_type=QuantType.QInt8,
                    activation_type=QuantType.QUInt8, reduce_range=True)
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / f"{name}.qop.onnx"
    quantize_static(str(SOURCES / entry["file"]), str(target), Reader(), calibrate_method=CalibrationMethod.MinMax,
                    **settings)
    import onnx
    model = onnx.load(str(target))
    sess = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    outs = sess.run(None, inputs)
    np.savez_compressed(OUT / f"{name}.qop.npz", **{f"in_{k}": v for k, v in enumerate(inputs.values())},
                        **{f"out_{k}": v for k, v in enumerate(outs)})
    ops = Counter(f"{n.domain}:{n.op_type}" if n.domain else n.op_type for n in model.graph.node)
    manifest = OUT / "manifest.json"
    entries = json.loads(manifest.read_text()) if manifest.exists() else {}
    entries[f"{name}.qop"] = {
        "file": target.name, "framework": "onnx", "source": f"{name} ({entry['source']})",
        "quantizer": f"onnxruntime {ort.__version__} quantize_static QOperator, per-channel int8 weights, uint8 "
                     "activations, reduce_range, MinMax on the saved input and a variant",
        "inputs": list(inputs), "outputs": [o.name for o in sess.get_outputs()],
        "contrib_ops": sorted(k.split(":", 1)[1] for k in ops if k.startswith("com.microsoft:"))}
    manifest.write_text(json.dumps(dict(sorted(entries.items())), indent=1) + "\n")
    size = target.stat().st_size + (OUT / f"{name}.qop.npz").stat().st_size
    print(f"{name}.qop: {size / 1024:.0f} KiB, {dict(sorted(ops.items()))}", flush=True)


def main() -> None:
    for name in MODELS:
        quantize(name)


if __name__ == "__main__":
    main()
