"""One small frozen graph per TensorFlow op atc-py converts (and per attribute variant), with TensorFlow's own
outputs: tests/data/tf_ops/<case>.pb + <case>.npz (in_K, out_K) + manifest.json (inputs, outputs, ops).
`python -m tools.real_models.tf_op_cases` in the dev venv (TensorFlow); tests/atc_py/frontend/test_tf_ops.py runs them."""
from __future__ import annotations

import json
import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "tf_ops"
R = np.random.default_rng(0)
v1 = tf.compat.v1


def f32(*shape):
    return R.standard_normal(shape).astype(np.float32)


def case(name, fn, *inputs):
    specs = [tf.TensorSpec(x.shape, tf.as_dtype(x.dtype), name=f"x{k}") for k, x in enumerate(inputs)]
    frozen = convert_variables_to_constants_v2(tf.function(fn).get_concrete_function(*specs))
    gd = frozen.graph.as_graph_def()
    outs = frozen(*[tf.constant(x) for x in inputs])
    outs = [np.asarray(o) for o in (outs if isinstance(outs, (list, tuple)) else [outs])]
    (OUT / f"{name}.pb").write_bytes(gd.SerializeToString(deterministic=True))
    np.savez_compressed(OUT / f"{name}.npz", **{f"in_{k}": x for k, x in enumerate(inputs)},
                        **{f"out_{k}": o for k, o in enumerate(outs)})
    ops = sorted({n.op for n in gd.node} - {"Const", "Placeholder", "Identity", "NoOp"})
    CASES[name] = {"inputs": [t.name.split(":")[0] for t in frozen.inputs], "ops": ops}
    print(name, ops, flush=True)


CASES: dict = {}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    w = f32(4, 6)
    case("einsum", lambda a, b: (tf.einsum("bij,bjk->bik", a, b), tf.einsum("abc,cd->abd", a, w),
                                 tf.einsum("bqhd,bkhd->bhqk", tf.reshape(a, [2, 3, 2, 2]), tf.reshape(a, [2, 3, 2, 2]))),
         f32(2, 3, 4), f32(2, 4, 5))
    case("erf_erfc_softplus_selu", lambda x: (tf.math.erf(x), tf.math.erfc(x), tf.nn.softplus(x), tf.nn.selu(x),
                                              tf.nn.leaky_relu(x, 0.3), tf.nn.relu6(x * 4)), f32(3, 5) * 3)
    case("sign_floor_squared_difference", lambda x, y: (tf.sign(x), tf.floor(x), tf.math.squared_difference(x, y),
                                                        tf.stop_gradient(x) * 2), f32(3, 4) * 3, f32(4))
    case("floordiv_floormod", lambda x, y, i, j: (tf.math.floordiv(x, y), tf.math.floormod(x, y),
                                                   tf.math.floordiv(i, j), tf.math.floormod(i, j)),
         f32(3, 4) * 5, np.array([1.5, -2.0, 3.0, -0.75], np.float32),
         np.arange(-6, 6, dtype=np.int32).reshape(3, 4), np.array([4, -3, 5, -2], np.int32))
    case("clip_by_value", lambda x, lo: (tf.clip_by_value(x, -0.5, 0.75), tf.clip_by_value(x, lo, lo + 1.0)),
         f32(3, 4), f32(4) * 0.5)
    case("range_cumsum", lambda x, n: (tf.range(2, 20, 3), tf.range(1.0, 2.0, 0.25),
                                       tf.math.cumsum(x, axis=1, exclusive=True, reverse=True), tf.math.cumsum(x, 0),
                                       tf.range(tf.reduce_sum(n)) * 2),
         f32(3, 4), np.array([2, 3], np.int32))
    case("broadcast_where_like", lambda x, c: (tf.broadcast_to(x, [2, 3, 4]), tf.where(c > 0, x, -x),
                                               tf.zeros_like(x), tf.ones_like(c, dtype=tf.int32) if False
                                               else tf.ones_like(c), tf.cast(tf.where(c > 0.5), tf.int32)),
         f32(3, 4), f32(3, 1))
    case("gather_scatter_nd", lambda p, u: (tf.gather_nd(p, [[0, 1], [2, 3], [1, 0]]), tf.gather_nd(p, [[2], [0]]),
                                            tf.scatter_nd([[1], [3], [1]], u, [5, 4])), f32(3, 4), f32(3, 4))
    case("one_hot", lambda i: (tf.one_hot(i, 5), tf.one_hot(i, 4, on_value=2.0, off_value=-1.0, axis=0)),
         np.array([0, 3, 1, 4, 7, -1], np.int32))
    case("top_k", lambda x: tuple(tf.math.top_k(x, 3)) + (tf.math.top_k(-x, 2, sorted=True).values,), f32(4, 9))
    x5 = f32(1, 4, 4, 3)
    case("conv2d_transpose", lambda x: (
        tf.nn.conv2d_transpose(x, f32(3, 3, 5, 3), [1, 7, 7, 5], 2, "SAME"),
        tf.nn.conv2d_transpose(x, f32(3, 3, 5, 3), [1, 8, 8, 5], 2, "SAME"),
        tf.nn.conv2d_transpose(x, f32(2, 3, 2, 3), [1, 5, 6, 2], 1, "VALID")), x5)
    case("conv3d", lambda x: (tf.nn.conv3d(x, f32(3, 3, 2, 3, 4), [1, 2, 2, 2, 1], "SAME"),
                              tf.nn.conv3d(x, f32(2, 2, 2, 3, 2), [1, 1, 2, 1, 1], "VALID")),
         f32(1, 5, 6, 7, 3))
    img = f32(2, 5, 6, 3)
    case("resize", lambda x: tuple(
        op(x, size, align_corners=a, half_pixel_centers=h)
        for op in (v1.image.resize_bilinear, v1.image.resize_nearest_neighbor)
        for size in ([7, 9], [3, 4])
        for a, h in ((False, False), (True, False), (False, True))), img)
    case("space_to_batch", lambda x, y: (tf.nn.conv1d(x, f32(3, 4, 6), 1, "SAME", dilations=2),
                                          tf.space_to_batch_nd(y, [2, 3], [[1, 1], [0, 1]]),
                                          tf.batch_to_space(tf.space_to_batch_nd(y, [2, 3], [[1, 1], [0, 1]]), [2, 3],
                                                            [[1, 1], [0, 1]])),
         f32(2, 11, 4), f32(1, 4, 5, 2))
    big = f32(3, 128, 128)   # 196 KB: above what import folds (64 KB), folded by the fold pass
    case("conv1d_big_filter", lambda x: tf.nn.conv1d(x, big, 1, "VALID"), f32(1, 9, 128))
    case("placeholder_with_default", lambda x: x + v1.placeholder_with_default(tf.constant([1.0, 2.0, 3.0]), [3]),
         f32(2, 3))
    (OUT / "manifest.json").write_text(json.dumps(CASES, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
