"""How fast can numpy run the sample CNN at all? A reference for issue 4's numeric target (om-run within 3x
of onnxruntime), printed by `make bench`.

`forward` is small_cnn.onnx written by hand in numpy for this one model: weights read from the file, BN folded,
preallocated padded buffers, im2col with one GEMM per conv, no simulator, no task loop, no generality. Its
output is checked against onnxruntime before it is timed. Whatever om-run does, it runs the same numpy calls
plus a generic kernel library and a task scheduler, so this time is a floor for it on this machine.
"""
from __future__ import annotations

import pathlib

import numpy as np
import onnx
from onnx import numpy_helper

MODEL = pathlib.Path(__file__).resolve().parent.parent / "models" / "small_cnn.onnx"


class SmallCnnNumpy:
    def __init__(self, path: pathlib.Path = MODEL):
        m = onnx.load(str(path))
        w = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
        eps = next(onnx.helper.get_attribute_value(a) for n in m.graph.node if n.op_type == "BatchNormalization"
                   for a in n.attribute if a.name == "epsilon")
        k = w["bn_scale"] / np.sqrt(w["bn_var"] + eps)
        self.w1 = (w["conv1_w"] * k[:, None, None, None]).reshape(16, -1)
        self.b1 = ((w["conv1_b"] - w["bn_mean"]) * k + w["bn_bias"])[:, None]
        self.w2, self.w3 = w["conv2_w"].reshape(16, -1), w["conv3_w"].reshape(16, -1)
        self.wd = w["dw_w"].reshape(16, 9, 1)
        self.fc_w, self.fc_b = w["fc_w"], w["fc_b"]
        self.p1 = np.zeros((3, 34, 34), np.float32)
        self.p2 = np.zeros((16, 18, 18), np.float32)
        self.c1 = np.empty((3, 3, 3, 32, 32), np.float32)
        self.c2 = np.empty((16, 3, 3, 16, 16), np.float32)
        ones = np.zeros((1, 18, 18), np.float32)
        ones[:, 1:17, 1:17] = 1
        self.counts = self._windows(ones, np.empty((1, 3, 3, 16, 16), np.float32), 16).sum(axis=(1, 2))

    @staticmethod
    def _windows(p, cols, size):
        for i in range(3):
            for j in range(3):
                cols[:, i, j] = p[:, i:i + size, j:j + size]
        return cols

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.p1[:, 1:33, 1:33] = x[0]
        c1 = self.w1 @ self._windows(self.p1, self.c1, 32).reshape(27, -1) + self.b1
        np.maximum(c1, 0, out=c1)
        c1 = c1.reshape(16, 32, 32)
        p1 = np.maximum(np.maximum(c1[:, ::2, ::2], c1[:, 1::2, ::2]), np.maximum(c1[:, ::2, 1::2], c1[:, 1::2, 1::2]))
        self.p2[:, 1:17, 1:17] = p1
        r2 = self.w2 @ self._windows(self.p2, self.c2, 16).reshape(144, -1)
        np.maximum(r2, 0, out=r2)
        self.p2[:, 1:17, 1:17] = r2.reshape(16, 16, 16)
        r3 = (self.w3 @ self._windows(self.p2, self.c2, 16).reshape(144, -1)).reshape(16, 16, 16) + p1
        np.maximum(r3, 0, out=r3)
        self.p2[:, 1:17, 1:17] = r3
        dw = np.matmul(self.wd.transpose(0, 2, 1), self._windows(self.p2, self.c2, 16).reshape(16, 9, -1))
        self.p2[:, 1:17, 1:17] = dw.reshape(16, 16, 16)
        ap = self._windows(self.p2, self.c2, 16).sum(axis=(1, 2)) / self.counts
        gap = np.concatenate([r3.reshape(16, -1), ap.reshape(16, -1)]).mean(axis=1)
        logits = self.fc_w @ gap + self.fc_b
        e = np.exp(logits - logits.max())
        return (e / e.sum())[None]
