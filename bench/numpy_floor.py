"""How fast can numpy run the sample CNN at all? A reference for om-run's numeric speed (the target: within 3x
of onnxruntime), printed by `make bench`.

`forward` is small_cnn.onnx written by hand in numpy for this one model: weights read from the file, BN
folded, preallocated padded buffers, im2col in one strided copy and one GEMM per conv, ReLU in place, no
simulator, no task loop, no generality (~30 numpy calls). Its output is checked against onnxruntime before it
is timed. Whatever om-run does, it runs at least such numpy calls plus a generic kernel library and a task
scheduler, so this time is a floor for it on this machine.
"""
from __future__ import annotations

import pathlib

import numpy as np
import onnx
from numpy.lib.stride_tricks import as_strided
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
        ones = np.zeros((1, 18, 18), np.float32)
        ones[:, 1:17, 1:17] = 1
        self.counts = self._cols(ones, 1, 16).sum(axis=0)      # AveragePool without padded cells

    @staticmethod
    def _cols(p, c, size):
        """3x3 im2col of padded planes p[c, size + 2, size + 2] in one strided copy: (c * 9, size * size)."""
        s = p.strides
        return as_strided(p, (c, 3, 3, size, size), (s[0], s[1], s[2], s[1], s[2])).reshape(c * 9, size * size)

    def forward(self, x: np.ndarray) -> np.ndarray:
        self.p1[:, 1:33, 1:33] = x[0]
        c1 = self.w1 @ self._cols(self.p1, 3, 32)
        c1 += self.b1
        np.maximum(c1, 0, out=c1)
        c1 = c1.reshape(16, 32, 32)
        p1 = np.maximum(c1[:, ::2, ::2], c1[:, 1::2, ::2])
        np.maximum(p1, np.maximum(c1[:, ::2, 1::2], c1[:, 1::2, 1::2]), out=p1)
        self.p2[:, 1:17, 1:17] = p1
        r2 = self.w2 @ self._cols(self.p2, 16, 16)
        np.maximum(r2, 0, out=r2)
        self.p2[:, 1:17, 1:17] = r2.reshape(16, 16, 16)
        r3 = (self.w3 @ self._cols(self.p2, 16, 16)).reshape(16, 16, 16)
        r3 += p1
        np.maximum(r3, 0, out=r3)
        self.p2[:, 1:17, 1:17] = r3
        dw = np.matmul(self.wd.transpose(0, 2, 1), self._cols(self.p2, 16, 16).reshape(16, 9, -1))
        self.p2[:, 1:17, 1:17] = dw.reshape(16, 16, 16)
        ap = self._cols(self.p2, 16, 16).reshape(16, 9, 256).sum(axis=1) / self.counts
        gap = np.concatenate([r3.reshape(16, -1), ap]).mean(axis=1)
        logits = self.fc_w @ gap + self.fc_b
        e = np.exp(logits - logits.max())
        return (e / e.sum())[None]
