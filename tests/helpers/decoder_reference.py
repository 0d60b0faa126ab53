"""Plain numpy references of the value-dependent attention and MoE ops (IFA, GroupedMatmul) and of the sample models that use them."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper


def ifa(q, k, v, lens, scale=None):
    b, n, _, d = q.shape
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    out = np.zeros_like(q, dtype=np.float64)
    for bi in range(b):
        length = int(lens[bi])
        for ni in range(n):
            s = scale * (k[bi, ni, :length].astype(np.float64) @ q[bi, ni, 0])
            p = np.exp(s - s.max())
            p /= p.sum()
            out[bi, ni, 0] = p @ v[bi, ni, :length]
    return out


def gmm(x, w, group_list):
    y = np.zeros((x.shape[0], w.shape[2]))
    start = 0
    for g, end in enumerate(group_list):
        y[start:end] = x[start:end].astype(np.float64) @ w[g]
        start = int(end)
    return y


def layernorm(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(-1, keepdims=True) + eps) * g + b


def weights(path) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}


def decoder_step(path, feeds) -> np.ndarray:
    w = weights(path)
    lens = feeds["seq_lens"] + 1
    group_list = np.cumsum(feeds["expert_counts"])
    h = np.tanh(layernorm(feeds["x"], w["ln_in_g"], w["ln_in_b"]) @ w["w_in"] + w["b_in"])
    b, hd = h.shape
    layer = 0
    while f"l{layer}_wq" in w:
        p = f"l{layer}_"
        k, v = feeds[f"{p}k_cache"], feeds[f"{p}v_cache"]
        n, d = k.shape[1], k.shape[3]
        q = (h @ w[f"{p}wq"]).reshape(b, n, 1, d)
        attn = ifa(q, k, v, lens).reshape(b, hd)
        h1 = h + attn @ w[f"{p}wo"]
        h = h1 + gmm(h1, w[f"{p}w_experts"], group_list)
        layer += 1
    logits = layernorm(h, w["ln_out_g"], w["ln_out_b"]) @ w["w_vocab"] + w["b_vocab"]
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def superkernel(path, feeds) -> np.ndarray:
    w = weights(path)
    x, k, v = feeds["x"], feeds["k_cache"], feeds["v_cache"]
    b, n, d = x.shape[0], k.shape[1], k.shape[3]
    q = (x @ w["wq"]).reshape(b, n, 1, d)
    return x + ifa(q, k, v, feeds["seq_lens"] + 1).reshape(b, n * d) @ w["wo"]


def custom_op(path, feeds) -> np.ndarray:
    w = weights(path)
    active = int(feeds["valid_rows"][0]) + 1
    xr = np.maximum(feeds["x"], 0)
    scaled = np.zeros_like(xr)
    scaled[:active] = xr[:active] * 0.5
    return scaled @ w["w"]
