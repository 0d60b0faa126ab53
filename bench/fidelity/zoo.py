"""The whole-model fidelity set: architectures with a published Ascend 310P3 throughput (Ascend/ModelZoo-PyTorch,
ACL_PyTorch/README.md, column "310P最优性能(对应bs)": the best ais_bench throughput and the batch size it was
measured at), as ONNX skeletons in bench/fidelity/zoo/ (tools/fidelity_zoo.py exports them from torchvision and
timm: the real layers, the float weights stripped) filled here with seeded random weights.

A skeleton keeps every integer initializer and every small float one (shapes, axes, scales a Resize reads); a
float tensor of more than SMALL elements is stored as its dims only and refilled with He-scaled normal values
(BatchNormalization variances positive), so the compiler folds and converts real-sized, non-constant weights."""
from __future__ import annotations

import pathlib
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto

ZOO_DIR = pathlib.Path(__file__).resolve().parent / "zoo"
SMALL = 64                      # float initializers up to this many elements are kept as exported
STRIPPED = "atc_py.fidelity.stripped"
README = "Ascend/ModelZoo-PyTorch `ACL_PyTorch/README.md` (310P table)"


@dataclass(frozen=True)
class ZooModel:
    name: str
    batch: int
    published: float            # images/s on Ascend310P3 (ais_bench)
    size: int = 224
    source: str = README


ZOO = {m.name: m for m in (
    ZooModel("resnet50", 64, 4250.0, source="Ascend/ModelZoo-PyTorch "
             "`ACL_PyTorch/built-in/cv/Resnet50_Pytorch_Infer/README.md`"),
    ZooModel("densenet121", 8, 2368.0),
    ZooModel("inception_v3", 8, 2736.0, size=299),
    ZooModel("mobilenet_v2", 4, 7072.0),
    ZooModel("regnetx_1_6gf", 8, 5426.759),
    ZooModel("repvgg_a0", 16, 8933.6),
    ZooModel("resnest50", 4, 1704.0),
    ZooModel("resnext101_32x8d", 8, 1251.0),
    ZooModel("shufflenet_v2", 32, 7765.0),
    ZooModel("squeezenet1_1", 8, 22418.0),
    ZooModel("vgg16", 16, 1567.0),
    ZooModel("vit_b_16", 32, 1189.0),
)}


def strip_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its large float initializers reduced to their dims (the skeleton tools/ commits)."""
    stripped = 0
    for t in model.graph.initializer:
        if t.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16) and int(np.prod(t.dims)) > SMALL:
            t.ClearField("raw_data")
            t.ClearField("float_data")
            t.ClearField("int32_data")
            stripped += 1
    entry = model.metadata_props.add()
    entry.key, entry.value = STRIPPED, str(stripped)
    return model


def _variances(model: onnx.ModelProto) -> set[str]:
    return {n.input[4] for n in model.graph.node if n.op_type == "BatchNormalization" and len(n.input) > 4}


def fill_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """A skeleton with seeded random weights: normal x sqrt(2 / fan-in) (fan-in: the product of every dim but
    the first), BatchNormalization variances |x| + 0.5."""
    rng = np.random.default_rng(seed)
    variances = _variances(model)
    for t in model.graph.initializer:
        n = int(np.prod(t.dims))
        if t.data_type not in (TensorProto.FLOAT, TensorProto.FLOAT16) or n <= SMALL or t.raw_data or t.float_data:
            continue
        fan_in = int(np.prod(t.dims[1:])) if len(t.dims) > 1 else n
        a = rng.standard_normal(n).astype(np.float32) * np.float32(np.sqrt(2.0 / max(fan_in, 1)))
        if t.name in variances:
            a = np.abs(a) + np.float32(0.5)
        t.raw_data = a.astype(np.float16 if t.data_type == TensorProto.FLOAT16 else np.float32).tobytes()
    return model


def load(name: str, seed: int = 0) -> onnx.ModelProto:
    path = ZOO_DIR / f"{name}.onnx"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: export it with `python tools/fidelity_zoo.py {name}` (torch, torchvision, "
                                "timm)")
    return fill_weights(onnx.load(str(path)), seed)
