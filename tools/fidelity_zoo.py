"""Export the whole-model fidelity set (bench/fidelity/zoo.py) as ONNX skeletons: the architectures Ascend's
ModelZoo publishes 310P3 throughput for, exported from torchvision / timm with a dynamic batch (the build gives
it with --input_shape, as ModelZoo's READMEs do), with their weights stripped (bench/fidelity/zoo.py fills them
with seeded random values when it loads one).

Needs torch, torchvision and timm (a dev venv, never `make test`):
    python tools/fidelity_zoo.py [--out bench/fidelity/zoo] [name ...]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fidelity.zoo import ZOO, strip_weights  # noqa: E402


def build(name: str):
    import timm
    import torchvision.models as tv
    makers = {
        "resnet50": lambda: tv.resnet50(),
        "densenet121": lambda: tv.densenet121(),
        "inception_v3": lambda: tv.inception_v3(aux_logits=False, init_weights=False),
        "mobilenet_v2": lambda: tv.mobilenet_v2(),
        "regnetx_1_6gf": lambda: tv.regnet_x_1_6gf(),
        "repvgg_a0": lambda: timm.create_model("repvgg_a0"),         # the train-time form ModelZoo exports
        "resnest50": lambda: timm.create_model("resnest50d"),
        "resnext101_32x8d": lambda: tv.resnext101_32x8d(),
        "shufflenet_v2": lambda: tv.shufflenet_v2_x1_0(),
        "squeezenet1_1": lambda: tv.squeezenet1_1(),
        "vgg16": lambda: tv.vgg16(),
        "vit_b_16": lambda: tv.vit_b_16(),
        "vit_b_32": lambda: tv.vit_b_32(),
    }
    return makers[name]().eval()


def export(name: str, out: pathlib.Path) -> pathlib.Path:
    import onnx
    import torch
    entry = ZOO[name]
    model = build(name)
    x = torch.randn(entry.batch, 3, entry.size, entry.size)
    path = out / f"{name}.onnx"
    tmp = out / f"{name}.full.onnx"
    torch.backends.mha.set_fastpath_enabled(False)   # ViT's fused MHA fast path has no ONNX export
    with torch.no_grad():
        torch.onnx.export(model, x, str(tmp), input_names=["image"], output_names=["logits"], opset_version=14,
                          do_constant_folding=True, dynamo=False,
                          dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})   # as ModelZoo exports
    m = strip_weights(onnx.load(str(tmp)))
    onnx.save(m, str(path))
    tmp.unlink()
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(ZOO))
    ap.add_argument("--out", default=str(ROOT / "bench" / "fidelity" / "zoo"))
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.names:
        p = export(name, out)
        print(f"{name}: {p} ({p.stat().st_size // 1024} KiB)", flush=True)


if __name__ == "__main__":
    main()
