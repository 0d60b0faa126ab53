"""Float stand-ins of the models whose quantized forms users report on: RepVGG and LR-ASPP MobileNetV3 (quantized
statically, QDQ), DeiT and ALBERT (quantized dynamically). Random weights and tiny configs so the quantized files
stay small; the structure is the real one: RepVGG's training-time block (a 3x3 and a 1x1 branch, each conv + BN,
and an identity BN, summed, then ReLU — the form exported before reparameterization), torchvision's LR-ASPP head
on a dilated MobileNetV3-Large (hard-swish, squeeze-excite, a sigmoid-gated branch, two bilinear resizes), and
Hugging Face's DeiT (class and distillation tokens, two heads averaged) and ALBERT (factorized embeddings, one
layer's weights shared by every layer). Dev venv only (torch, torchvision, transformers): used by
quantized_models.py, which exports and quantizes them.

Each builder returns (module, example inputs, input names, output names); the inputs are what the fixture is
calibrated on and saved with."""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .torch_models import _DictOut, _randomize_bn, _randomize_zeros, strip


class RepVGGBlock(nn.Module):
    """RepVGG's training-time block: relu(bn(conv3x3(x)) + bn(conv1x1(x)) [+ bn(x) where shapes allow])."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.dense = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout))
        self.one = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False), nn.BatchNorm2d(cout))
        self.identity = nn.BatchNorm2d(cin) if cin == cout and stride == 1 else None
        self.act = nn.ReLU()

    def forward(self, x):
        y = self.dense(x) + self.one(x)
        if self.identity is not None:
            y = y + self.identity(x)
        return self.act(y)


class RepVGG(nn.Module):
    """RepVGG-A's layout (a stride-2 stem block, four stages each opening with a stride-2 block), narrow."""

    def __init__(self, widths=(8, 16, 32, 48), depths=(1, 2, 2, 1), classes: int = 10):
        super().__init__()
        blocks, cin = [RepVGGBlock(3, widths[0], 2)], widths[0]
        for w, d in zip(widths, depths):
            for k in range(d):
                blocks.append(RepVGGBlock(cin, w, 2 if k == 0 else 1))
                cin = w
        self.body = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.body(x)), 1))


def _image(n: int, batch: int, seed: int = 0) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).standard_normal((batch, 3, n, n)).astype(np.float32))


def repvgg():
    return RepVGG(), (_image(64, 2),), ["x"], ["logits"]


def tv_lraspp():
    """torchvision's lraspp_mobilenet_v3_large (its _lraspp_mobilenetv3) on a quarter-width backbone, the head's
    128 inner channels cut to 32."""
    from torchvision.models import mobilenet_v3_large
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation.lraspp import LRASPP
    features = mobilenet_v3_large(width_mult=0.25, dilated=True).features
    stages = [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]
    low, high = stages[-4], stages[-1]          # output stride 8 and 16
    body = IntermediateLayerGetter(features, return_layers={str(low): "low", str(high): "high"})
    model = LRASPP(body, features[low].out_channels, features[high].out_channels, 5, inter_channels=32)
    return _DictOut(model, ["out"]), (_image(96, 1),), ["x"], ["out"]


def hf_deit():
    from transformers import DeiTConfig, DeiTForImageClassificationWithTeacher
    cfg = DeiTConfig(image_size=32, patch_size=8, hidden_size=48, num_hidden_layers=2, num_attention_heads=3,
                     intermediate_size=96, num_labels=10)
    cfg._attn_implementation = "eager"
    model = DeiTForImageClassificationWithTeacher(cfg)
    return _DictOut(model, ["logits"], lambda m, x: m(pixel_values=x)), (_image(32, 2),), ["x"], ["logits"]


def hf_albert():
    from transformers import AlbertConfig, AlbertForSequenceClassification
    cfg = AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=32, num_hidden_layers=4,
                       num_attention_heads=2, intermediate_size=64, max_position_embeddings=64, num_labels=3)
    cfg._attn_implementation = "eager"
    model = AlbertForSequenceClassification(cfg)
    rng = np.random.default_rng(1)
    ids = torch.from_numpy(rng.integers(1, 100, (2, 16)).astype(np.int64))
    mask = torch.ones((2, 16), dtype=torch.int64)
    mask[1, -3:] = 0          # the second sequence has a padded tail
    return _DictOut(model, ["logits"], lambda m, i, a: m(input_ids=i, attention_mask=a)), (ids, mask), \
        ["input_ids", "attention_mask"], ["logits"]


STATIC = {"repvgg": repvgg, "tv_lraspp": tv_lraspp}
DYNAMIC = {"hf_deit": hf_deit, "hf_albert": hf_albert}


def float_model(build) -> tuple[bytes, list[np.ndarray], list[str], list[str]]:
    """The stand-in exported as users export it (TorchScript, opset 17, with BN folded into the convolutions it
    follows), with its inputs: (model bytes, inputs, input names, output names)."""
    import contextlib
    import io
    import warnings
    torch.manual_seed(0)
    model, args, in_names, out_names = build()
    model.eval()
    _randomize_bn(model, 0)
    _randomize_zeros(model, 1)
    buf = io.BytesIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, buf, opset_version=17, dynamo=False, input_names=in_names,
                          output_names=out_names, do_constant_folding=True)
    import onnx
    return strip(onnx.load_from_string(buf.getvalue())).SerializeToString(), [a.numpy() for a in args], in_names, \
        out_names
