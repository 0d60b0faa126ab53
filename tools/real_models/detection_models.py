"""torchvision detectors with their post-processing (box decoding, score thresholds, batched NMS, top-k), tiny random
backbones, exported by the TorchScript exporter at opset 17 as torchvision's own ONNX tests do.

    python -m tools.real_models.detection_models [NAME ...]     # dev venv: torch 2.14.1 + torchvision 0.29.1

writes tests/data/detection/<name>.onnx and <name>.npz (`images` [3, 64, 64], torch's `boxes`, `scores`,
`labels`, and the same from torch's own fp16 inference under autocast, `boxes_autocast`, ...: the framework's fp16
error). NAME: retinanet, fcos, ssd, fasterrcnn (its RPN and ROI heads keep no box for this input: the empty
path of every op after them), ssdlite (SSDlite320-MobileNetV3's head, anchors and post-processing on six tiny
levels: the 64x64 image resized to 320x320, 90 classes each keeping its top 300 of 3234 anchors, nearly all above
the 0.001 threshold, so one batched NMS over ~27,000 boxes inside an If)."""
from __future__ import annotations

import contextlib
import io
import pathlib
import sys
import warnings
from collections import OrderedDict
from functools import partial

import numpy as np
import onnx
import torch
import torchvision
from torch import nn
from torchvision.models.detection import FCOS, FasterRCNN, RetinaNet
from torchvision.models.detection.anchor_utils import AnchorGenerator, DefaultBoxGenerator
from torchvision.models.detection.ssd import SSD
from torchvision.models.detection.ssdlite import SSDLiteHead

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "detection"


class TinyBackbone(nn.Module):
    """Two feature levels (strides 8, 16) of 16 channels: what the detectors' heads and FPN-free paths take."""
    def __init__(self, c=32):
        super().__init__()
        self.s1 = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.ReLU(), nn.Conv2d(c, c, 3, 2, 1), nn.ReLU(), nn.Conv2d(c, c, 3, 2, 1), nn.ReLU())
        self.s2 = nn.Sequential(nn.Conv2d(c, c, 3, 2, 1), nn.ReLU())
        self.out_channels = c
    def forward(self, x):
        a = self.s1(x)
        b = self.s2(a)
        return OrderedDict([("0", a), ("1", b)])

class SingleLevel(TinyBackbone):
    def forward(self, x):
        return OrderedDict([("0", self.s2(self.s1(x)))])

def retinanet():
    anchors = AnchorGenerator(((16,), (32,)), ((0.5, 1.0, 2.0),) * 2)
    return RetinaNet(TinyBackbone(), num_classes=5, anchor_generator=anchors, min_size=64, max_size=64, score_thresh=0.05,
                     detections_per_img=20)

def fcos():
    anchors = AnchorGenerator(((16,), (32,)), ((1.0,),) * 2)
    return FCOS(TinyBackbone(), num_classes=5, anchor_generator=anchors, min_size=64, max_size=64, score_thresh=0.2, detections_per_img=20)

def fasterrcnn():
    anchors = AnchorGenerator(((16, 32),), ((0.5, 1.0, 2.0),))
    roi = torchvision.ops.MultiScaleRoIAlign(["0"], 7, 2)
    from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
    return FasterRCNN(SingleLevel(), num_classes=None, rpn_anchor_generator=anchors, box_roi_pool=roi, min_size=64, max_size=64,
                      box_head=TwoMLPHead(32 * 7 * 7, 64), box_predictor=FastRCNNPredictor(64, 5),
                      rpn_pre_nms_top_n_test=50, rpn_post_nms_top_n_test=20, box_detections_per_img=10, box_score_thresh=0.0)

def ssd():
    gen = DefaultBoxGenerator([[2], [2]])
    bb = TinyBackbone()
    bb.out_channels = [32, 32]
    return SSD(bb, gen, (64, 64), num_classes=5, score_thresh=0.2, detections_per_img=20, topk_candidates=50)

class SixLevels(nn.Module):
    """SSDlite320's six feature levels (20, 10, 5, 3, 2, 1 cells for a 320x320 input) of 16 channels."""
    def __init__(self, c=16):
        super().__init__()
        conv = lambda i: nn.Sequential(nn.Conv2d(i, c, 3, 2, 1), nn.ReLU())  # noqa: E731
        self.stem = nn.Sequential(conv(3), conv(c), conv(c), conv(c))
        self.levels = nn.ModuleList(conv(c) for _ in range(5))
    def forward(self, x):
        out = [self.stem(x)]
        for level in self.levels:
            out.append(level(out[-1]))
        return OrderedDict((str(i), f) for i, f in enumerate(out))

def ssdlite():
    anchors = DefaultBoxGenerator([[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95)
    head = SSDLiteHead([16] * 6, anchors.num_anchors_per_location(), 91,
                       partial(nn.BatchNorm2d, eps=0.001, momentum=0.03))
    return SSD(SixLevels(), anchors, (320, 320), 91, head=head, score_thresh=0.001, nms_thresh=0.55,
               detections_per_img=300, topk_candidates=300, image_mean=[0.5] * 3, image_std=[0.5] * 3)

MODELS = {"retinanet": retinanet, "fcos": fcos, "ssd": ssd, "fasterrcnn": fasterrcnn, "ssdlite": ssdlite}
# weight scale: wide enough that scores pass the thresholds, narrow enough that no score saturates to 1.0 (ties
# order detections arbitrarily) and boxes stay inside the image (FCOS normalises with GroupNorm)
INIT_STD = {"retinanet": 0.095, "fcos": 0.3, "ssd": 0.06, "fasterrcnn": 0.06, "ssdlite": 0.2}


def make(name: str) -> None:
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.normal_(p, 0, INIT_STD[name])
    image = torch.rand(3, 64, 64)
    with torch.no_grad():
        ref = model([image])[0]
        with torch.autocast("cpu", dtype=torch.float16):
            ref16 = {f"{k}_autocast": v.float() if v.is_floating_point() else v for k, v in model([image])[0].items()}
    buf = io.BytesIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, ([image],), buf, opset_version=17, dynamo=False, input_names=["images"],
                          output_names=list(ref))   # the order the detector returns them in
    m = onnx.load_from_string(buf.getvalue())
    for n in m.graph.node:
        n.doc_string = ""
    OUT.mkdir(parents=True, exist_ok=True)
    onnx.save(m, str(OUT / f"{name}.onnx"))
    np.savez(OUT / f"{name}.npz", images=image.numpy(), **{k: v.numpy() for k, v in {**ref, **ref16}.items()})
    print(name, {k: tuple(v.shape) for k, v in ref.items()})


def main(argv: list[str]) -> None:
    for name in argv or list(MODELS):
        make(name)


if __name__ == "__main__":
    main(sys.argv[1:])
