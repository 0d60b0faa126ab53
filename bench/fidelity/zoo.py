"""The whole-model fidelity set: architectures with a published Ascend 310P3 throughput (Ascend/ModelZoo-PyTorch,
ACL_PyTorch/README.md, column "310P最优性能(对应bs)": the best ais_bench throughput and the batch size it was
measured at), as ONNX skeletons in bench/fidelity/zoo/ (tools/fidelity_zoo.py exports them from torchvision and
timm: the real layers, the float weights stripped) filled here with seeded random weights. Each figure is the
model's own README (its newest table), built with the flags that README gives ATC.

A skeleton keeps every integer initializer and every small float one (shapes, axes, scales a Resize reads); a
float tensor of more than SMALL elements is stored as its dims only and refilled with He-scaled normal values
(BatchNormalization variances positive), so the compiler folds and converts real-sized, non-constant weights."""
from __future__ import annotations

import pathlib
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto

ZOO_DIR = pathlib.Path(__file__).resolve().parent / "zoo"
SMALL = 64                      # float initializers up to this many elements are kept as exported
STRIPPED = "atc_py.fidelity.stripped"
REPO = "Ascend/ModelZoo-PyTorch"
BATCHES = (1, 4, 8, 16, 32, 64)
CV = "ACL_PyTorch/contrib/cv/classfication"
BUILT_IN = "ACL_PyTorch/built-in/cv"
SMALL_CHANNEL = {"ge.enableSmallChannel": "1"}
# what the READMEs' AIPP configs do: uint8 RGB in, ImageNet's mean and 1/std per channel on the device
AIPP_FIELDS = {"input_format": "RGB888_U8", "csc_switch": "false", "mean_chn_0": 0, "mean_chn_1": 0,
               "mean_chn_2": 0, "min_chn_0": 123.675, "min_chn_1": 116.28, "min_chn_2": 103.53,
               "var_reci_chn_0": 0.0171247538, "var_reci_chn_1": 0.0175070028, "var_reci_chn_2": 0.0174291939}


@dataclass(frozen=True)
class ZooModel:
    """One published figure: images/s on Ascend310P3 (ais_bench pure inference) at `batch`, from `readme` at
    `commit` of Ascend/ModelZoo-PyTorch, the ATC flags that README uses (`options`, atc_py.build keys) and whether
    it inserts AIPP (--insert_op_conf: the image enters as uint8 and is normalised on the device)."""
    name: str
    batch: int
    published: float
    readme: str
    commit: str
    size: int = 224
    options: dict = field(default_factory=dict)
    aipp: bool = False
    note: str = ""
    by_batch: tuple = ()        # the same table's figures at batch 1, 4, 8, 16, 32, 64 (BATCHES), where it has them

    @property
    def source(self) -> str:
        return f"{REPO} `{self.readme}` @ {self.commit[:9]}"


# the per-model READMEs' 310P3 tables at the batch size ACL_PyTorch/README.md names as each model's best; the
# newest version of each table (read from the repository's history)
ZOO = {m.name: m for m in (
    ZooModel("resnet50", 64, 4250.0, f"{BUILT_IN}/Resnet50_Pytorch_Infer/README.md", "c36320328a1e",
             options=SMALL_CHANNEL, aipp=True),
    ZooModel("densenet121", 8, 2194.99, f"{BUILT_IN}/Densenet121_Pytorch_Infer/ReadMe.md", "b3324a6dc10f",
             by_batch=(1087.52, 2004.17, 2194.99, 1671.32, 1411.77, 1276.81)),
    ZooModel("inception_v3", 8, 2388.07, f"{BUILT_IN}/InceptionV3_for_Pytorch/README.md", "a73f3a70f", size=299,
             aipp=True,
             by_batch=(1099.11, 2300.75, 2388.07, 2336.78, 2317.59, 1916.61)),
    ZooModel("mobilenet_v2", 4, 7072.0, f"{BUILT_IN}/MobileNetV2_for_Pytorch/README.md", "ebab5ac81", aipp=True),
    ZooModel("regnetx_1_6gf", 8, 5426.759, f"{CV}/RegNetX-1.6GF/README.md", "9ab042be6",
             note="timm regnetx_016 there, torchvision regnet_x_1_6gf here (the same RegNetX-1.6GF)",
             by_batch=(1697.966, 4427.228, 5426.759, 4538.344, 4071.895, 3847.592)),
    ZooModel("repvgg_a0", 16, 8933.6, f"{CV}/RepVGG/README.md", "2959b9d71",
             note="RepVGG-A0 exported with deploy=False (the train-time branches), as here",
             by_batch=(1938.0, 4694.8, 6739.7, 8933.6, 8667.4, 5837.8)),
    ZooModel("resnest50", 4, 1704.0, f"{CV}/ResNeSt50/README.md", "559ef9799",
             note="zhanghang1989's resnest50 there, timm resnest50d here",
             by_batch=(435.0, 1704.0, 1630.0, 1326.0, 1161.0, 1107.0)),
    ZooModel("resnext101_32x8d", 8, 1251.495, f"{CV}/ResNext101_32x8d/README.md", "963cbbac9",
             by_batch=(606.606, 1112.783, 1251.495, 971.797, 1157.749, 803.158)),
    ZooModel("shufflenet_v2", 32, 7736.07, f"{BUILT_IN}/Shufflenetv2_for_Pytorch/ReadMe.md", "a73f3a70f",
             options=SMALL_CHANNEL, aipp=True,
             by_batch=(2035.68, 3988.08, 5125.15, 5480.19, 7736.07, 6584.61)),
    ZooModel("squeezenet1_1", 8, 19546.3, f"{CV}/Squeezenet1_1/README.md", "3025cbe7e", options=SMALL_CHANNEL,
             aipp=True,
             by_batch=(4849.7, 14058.3, 19546.3, 18339.9, 15468.8, 14051.23)),
    ZooModel("vgg16", 16, 1424.51, f"{CV}/VGG16/README.md", "fb7276ee1",
             by_batch=(465.54, 1056.92, 1187.63, 1424.51, 1338.95, 1430.39)),
    ZooModel("vit_b_16", 32, 599.02, f"{CV}/ViT_base/performances.md", "b88b201e2",
             options={**SMALL_CHANNEL, "optypelist_for_implmode": "Gelu",
                      "op_select_implmode": "high_performance"},
             note="ViT_base_patch16_224; the README rewrites the ONNX first (opt_vit.py pads the 197 tokens to "
                  "208 for FRACTAL_NZ), not done here",
             by_batch=(342.34, 541.11, 655.67, 660.64, 599.02, 558.65)),
    # the same README's ViT-B/32: the same twelve 768-wide layers over 50 tokens, the "ViT_base 1189 (bs32)" of
    # ACL_PyTorch/README.md's older table (its newer figure here)
    ZooModel("vit_b_32", 32, 1593.47, f"{CV}/ViT_base/performances.md", "b88b201e2",
             options={**SMALL_CHANNEL, "optypelist_for_implmode": "Gelu",
                      "op_select_implmode": "high_performance"},
             note="ViT_base_patch32_224; opt_vit.py pads its 50 tokens to 64 there, not done here",
             by_batch=(431.89, 1118.96, 1439.61, 1569.50, 1593.47, 1679.63)),
)}


def build_options(z: ZooModel, workdir: pathlib.Path, batch: int | None = None) -> dict:
    """The README's ATC flags as atc_py.build options (its AIPP config written into `workdir`), the input at
    the README's batch or `batch`."""
    opts = {**z.options, "input_shape": f"image:{batch or z.batch},3,{z.size},{z.size}"}
    if z.aipp:
        cfg = workdir / f"{z.name}_aipp.cfg"
        body = [f"  src_image_size_w: {z.size}", f"  src_image_size_h: {z.size}"] + \
            [f"  {k}: {v}" for k, v in AIPP_FIELDS.items()]
        cfg.write_text("aipp_op {\n  aipp_mode: static\n  related_input_rank: 0\n" + "\n".join(body) + "\n}\n")
        opts["insert_op_conf"] = str(cfg)
    return opts


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
    """A skeleton (its batch dynamic: build_options gives it) with seeded random weights."""
    path = ZOO_DIR / f"{name}.onnx"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: export it with `python tools/fidelity_zoo.py {name}` (torch, torchvision, "
                                "timm)")
    return fill_weights(onnx.load(str(path)), seed)
