"""Published figures om-run's simulated time is held against, each with its source and how to simulate it.

GEMMs are single MatMul kernels (timing only) at the measured shape and dtype; models are the onnx light models
(the real layers, constant weights) compiled with ATC's defaults (force_fp16) and timed on the device, second
execution (ais_bench's throughput, which the ModelZoo figures come from, is batch / NPU compute time: no host
copies). `target` is the largest allowed predicted/published (or published/predicted) ratio where the issue
sets one; `calibrates` names the profile parameter the anchor sets (calibrate.py)."""
from __future__ import annotations

import pathlib
import tempfile
from dataclasses import dataclass
from typing import Callable

from runner.sim.profile import RuntimeProfile

from .models import light_model
from .sweep import compile_model, kernels, matmul, simulate

GEMM_SOURCE = ("zzc0721/torch-performance-test-data issue #109 (Ascend910B2, torch 2.5.1 + torch_npu, "
               "torch.matmul of n x n matrices): https://github.com/zzc0721/torch-performance-test-data/issues/109")
RESNET_SOURCE = ("Ascend/ModelZoo-PyTorch ACL_PyTorch/built-in/cv/Resnet50_Pytorch_Infer/README.md "
                 "(310P3, batch 64, ais_bench on the ATC om: 4250 fps)")
DENSENET_SOURCE = ("Ascend/ModelZoo-PyTorch ACL_PyTorch/README.md, table 310P最优性能 (DenseNet121: 2368 fps at "
                   "batch 8)")
# short markdown references for the README table
GEMM_REF = "[torch-performance-test-data #109](https://github.com/zzc0721/torch-performance-test-data/issues/109)"
RESNET_REF = "Ascend/ModelZoo-PyTorch `ACL_PyTorch/built-in/cv/Resnet50_Pytorch_Infer/README.md`"
DENSENET_REF = "Ascend/ModelZoo-PyTorch `ACL_PyTorch/README.md` (310P table)"


@dataclass
class Anchor:
    name: str
    soc: str
    published: float
    unit: str
    source: str
    predict: Callable[[RuntimeProfile], float]
    target: float | None = None
    calibrates: str | None = None
    note: str = ""
    ref: str = ""          # the source, short (README)

    def ratio(self, predicted: float) -> float:
        """How far the prediction is from the figure, >= 1 either way."""
        return max(predicted / self.published, self.published / predicted) if predicted > 0 else float("inf")


_models: dict = {}


def _compiled(key, build, soc, precision: str):
    if key not in _models:
        with tempfile.TemporaryDirectory() as d:
            _models[key] = compile_model(build(), soc, pathlib.Path(d), precision=precision)
    return _models[key]


def gemm_tflops(n: int, dtype: str, soc: str = "Ascend910B2") -> Callable[[RuntimeProfile], float]:
    def predict(prof: RuntimeProfile) -> float:
        model = _compiled(("gemm", n, dtype, soc), lambda: matmul(n, n, n)(dtype), soc, "must_keep_origin_dtype")
        (k,) = kernels(simulate(model, prof))
        return 2 * n ** 3 / (k.end - k.start) / 1e3   # FLOP/ns / 1e3 = TFLOP/s
    return predict


def model_throughput(name: str, batch: int, soc: str) -> Callable[[RuntimeProfile], float]:
    def predict(prof: RuntimeProfile) -> float:
        model = _compiled((name, batch, soc), lambda: light_model(name, batch), soc, "")
        stats = simulate(model, prof, loops=2)
        return batch / (stats.device_ns / 1e9)
    return predict


ANCHORS = [
    Anchor("GEMM 4096^3 fp16", "Ascend910B2", 314.52, "TFLOP/s", GEMM_SOURCE, gemm_tflops(4096, "float16"),
           1.3, "cube_efficiency", ref=GEMM_REF),
    Anchor("GEMM 4096^3 fp32", "Ascend910B2", 84.53, "TFLOP/s", GEMM_SOURCE, gemm_tflops(4096, "float32"),
           1.3, "fp32_cube_rate", ref=GEMM_REF),
    Anchor("GEMM 8192^3 fp16", "Ascend910B2", 305.46, "TFLOP/s", GEMM_SOURCE, gemm_tflops(8192, "float16"), ref=GEMM_REF),
    Anchor("GEMM 8192^3 fp32", "Ascend910B2", 80.43, "TFLOP/s", GEMM_SOURCE, gemm_tflops(8192, "float32"), ref=GEMM_REF),
    Anchor("GEMM 2048^3 fp16", "Ascend910B2", 251.01, "TFLOP/s", GEMM_SOURCE, gemm_tflops(2048, "float16"),
           note="a 55 us kernel: torch_npu's per-call host cost shows in the measurement, not simulated here",
           ref=GEMM_REF),
    Anchor("GEMM 1024^3 fp16", "Ascend910B2", 98.08, "TFLOP/s", GEMM_SOURCE, gemm_tflops(1024, "float16"),
           note="host-bound in the measurement (22 us per call), not simulated here", ref=GEMM_REF),
    Anchor("ResNet-50 batch 64", "Ascend310P3", 4250, "images/s", RESNET_SOURCE,
           model_throughput("resnet50", 64, "Ascend310P3"), 1.5, ref=RESNET_REF),
    Anchor("DenseNet-121 batch 8", "Ascend310P3", 2368, "images/s", DENSENET_SOURCE,
           model_throughput("densenet121", 8, "Ascend310P3"), ref=DENSENET_REF),
]
