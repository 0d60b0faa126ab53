"""Keras 3 and tf-keras models (random weights, tiny configs) frozen the usual way: a tf.function of the model's
inference call, variables turned into constants (convert_variables_to_constants_v2), the GraphDef written.
`python -m tools.real_models.keras_models [NAME ...]` (dev venv: tensorflow, tf-keras) rewrites the named
fixtures (all by default)."""
from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN kernels (on by default on x86) differ from its own reference kernels by up to ~1e-3 on
# these models (seen on MultiHeadAttention's einsums and grouped convolutions): off, graph and eager agree
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # noqa: E402

from .common import rel_err, save_fixture  # noqa: E402

SEQ, VOCAB, B = 16, 100, 2


def mha_encoder(k):
    """Token embedding + sinusoidal positions, two post-norm encoder blocks (MultiHeadAttention, GELU FFN)."""
    ids = k.Input((SEQ,), batch_size=B, dtype="int32", name="tokens")
    angle = np.arange(SEQ)[:, None] / 10000 ** (np.arange(0, 32, 2)[None] / 32)
    pos = np.concatenate([np.sin(angle), np.cos(angle)], -1)[None].astype(np.float32)   # sinusoidal positions
    x = k.layers.Embedding(VOCAB, 32)(ids) + pos
    for _ in range(2):
        a = k.layers.MultiHeadAttention(num_heads=2, key_dim=16)(x, x)
        x = k.layers.LayerNormalization(epsilon=1e-6)(x + a)
        f = k.layers.Dense(64, activation="gelu")(x)
        x = k.layers.LayerNormalization(epsilon=1e-6)(x + k.layers.Dense(32)(f))
    y = k.layers.Dense(5)(k.layers.GlobalAveragePooling1D()(x))
    return k.Model(ids, y), [np.random.default_rng(0).integers(0, VOCAB, (B, SEQ)).astype(np.int32)]


def convnext(k):
    """keras.applications' ConvNeXt builder with a tiny depth/width configuration."""
    apps = _apps(k, "convnext")
    name = {"name" if k.__name__ == "keras" else "model_name": "convnext_tiny_cfg"}
    model = apps.ConvNeXt(depths=[1, 1, 1, 1], projection_dims=[8, 16, 32, 64], drop_path_rate=0.0,
                          layer_scale_init_value=1.0, default_size=64, include_top=True, include_preprocessing=True,
                          weights=None, input_shape=(64, 64, 3), classes=10, **name)
    return _batched(k, model, (64, 64, 3)), [_image(64)]


def regnet(k):
    """RegNetY (grouped 3x3 convs, squeeze-excite): tf-keras' applications builder; Keras 3 has none, so its
    Y block is written out with the same layers."""
    if k.__name__ != "keras":
        model = _apps(k, "regnet").RegNet(depths=[1, 1, 2, 1], widths=[8, 16, 32, 64], group_width=8,
                                          block_type="Y", default_size=64, model_name="regnety_tiny_cfg",
                                          include_preprocessing=True, include_top=True, weights=None,
                                          input_shape=(64, 64, 3), classes=10)
        return _batched(k, model, (64, 64, 3)), [_image(64)]
    L = k.layers

    def bn_act(x, act=True):
        x = L.BatchNormalization(epsilon=1e-5, momentum=0.9)(x)
        return L.ReLU()(x) if act else x

    def y_block(x, c_in, c_out, stride):
        skip = x if stride == 1 and c_in == c_out else \
            bn_act(L.Conv2D(c_out, 1, strides=stride, use_bias=False)(x), False)
        x = bn_act(L.Conv2D(c_out, 1, use_bias=False)(x))
        x = bn_act(L.Conv2D(c_out, 3, strides=stride, groups=c_out // 8, padding="same", use_bias=False)(x))
        se = L.GlobalAveragePooling2D(keepdims=True)(x)
        se = L.Conv2D(c_out, 1, activation="sigmoid")(L.Conv2D(max(1, c_in // 4), 1, activation="relu")(se))
        x = bn_act(L.Conv2D(c_out, 1, use_bias=False)(L.Multiply()([x, se])), False)
        return L.ReLU()(x + skip)
    inp = k.Input((64, 64, 3), batch_size=B, name="image")
    x = bn_act(L.Conv2D(32, 3, strides=2, padding="same", use_bias=False)(L.Rescaling(1 / 255.0)(inp)))
    c = 32
    for depth, width in zip([1, 1, 2, 1], [8, 16, 32, 64]):
        for d in range(depth):
            x = y_block(x, c, width, 2 if d == 0 else 1)
            c = width
    return k.Model(inp, L.Dense(10)(L.GlobalAveragePooling2D()(x))), [_image(64)]


def mobilenet_v2(k):
    """keras.applications' MobileNetV2 (inverted residuals, ReLU6, depthwise convs) at width 0.35, 64x64."""
    model = k.applications.MobileNetV2(input_shape=(64, 64, 3), alpha=0.35, weights=None, classes=10)
    return _batched(k, model, (64, 64, 3)), [_image(64, 1.0)]


def mobilenet_v3_small(k):
    """keras.applications' MobileNetV3Small (hard-swish, squeeze-excite, built-in rescaling) at width 0.75."""
    model = k.applications.MobileNetV3Small(input_shape=(64, 64, 3), alpha=0.75, weights=None, classes=10,
                                            include_preprocessing=True)
    return _batched(k, model, (64, 64, 3)), [_image(64)]


def _batched(k, model, shape):
    """The application model called on an input with a fixed batch (frozen graphs have static shapes)."""
    inp = k.Input(shape, batch_size=B, name="image")
    return k.Model(inp, model(inp))


def unet(k):
    """Two-level U-Net: conv-BN-ReLU pairs, max-pool down, Conv2DTranspose and bilinear/nearest upsampling
    back up, skip concatenations."""
    L = k.layers

    def block(x, c):
        for _ in range(2):
            x = L.ReLU()(L.BatchNormalization()(L.Conv2D(c, 3, padding="same", use_bias=False)(x)))
        return x
    inp = k.Input((32, 32, 3), batch_size=B, name="image")
    e1 = block(inp, 8)
    e2 = block(L.MaxPooling2D()(e1), 16)
    mid = block(L.MaxPooling2D()(e2), 32)
    u2 = L.Conv2DTranspose(16, 3, strides=2, padding="same")(mid)
    d2 = block(L.Concatenate()([u2, e2]), 16)
    u1 = L.UpSampling2D(interpolation="bilinear")(d2)
    u1n = L.UpSampling2D(interpolation="nearest")(L.Conv2D(4, 1)(d2))
    d1 = block(L.Concatenate()([u1, u1n, e1]), 8)
    return k.Model(inp, L.Conv2D(3, 1, activation="sigmoid")(d1)), [_image(32, 1.0)]


def conv1d_text(k):
    """Embedding -> Conv1D/MaxPool1D -> Conv1D -> global max pool -> Dense softmax (Keras' text CNN)."""
    L = k.layers
    ids = k.Input((64,), batch_size=B, dtype="int32", name="tokens")
    x = L.Embedding(VOCAB, 16)(ids)
    x = L.MaxPooling1D(2)(L.Conv1D(32, 5, activation="relu")(x))
    x = L.Conv1D(32, 3, padding="same", activation="relu", dilation_rate=2)(x)
    x = L.Dense(16, activation="relu")(L.GlobalMaxPooling1D()(x))
    return k.Model(ids, L.Dense(4, activation="softmax")(x)), \
        [np.random.default_rng(0).integers(0, VOCAB, (B, 64)).astype(np.int32)]


def _image(n: int, scale: float = 255.0) -> np.ndarray:
    """Pixels in [0, 255] for the applications (they rescale inside), [0, 1] for models that do not."""
    return (np.random.default_rng(0).random((B, n, n, 3)) * scale).astype(np.float32)


def _apps(k, name: str):
    """The applications module whose builder takes a custom depth/width configuration."""
    import importlib
    return importlib.import_module(f"{'keras.src' if k.__name__ == 'keras' else 'tf_keras.src'}.applications.{name}")


def _randomize(model) -> None:
    """BatchNorm statistics and zero/one-initialised weights get random values (random weights everywhere)."""
    rng = np.random.default_rng(5)
    for w in model.weights:
        v = w.numpy()
        name = w.path if hasattr(w, "path") else w.name
        if "moving_variance" in name:
            w.assign(rng.uniform(0.75, 1.25, v.shape).astype(v.dtype))
        elif "moving_mean" in name or not np.any(v) or np.all(v == 1):
            scale = 0.1 if not np.all(v == 1) else 0.25
            w.assign((np.ones_like(v) if np.all(v == 1) else 0) + rng.normal(0, scale, v.shape).astype(v.dtype))


def freeze(model, inputs) -> tf.compat.v1.GraphDef:
    specs = [tf.TensorSpec(x.shape, tf.as_dtype(x.dtype), name=n)
             for x, n in zip(inputs, [i.name.split(":")[0] for i in model.inputs])]
    fn = tf.function(lambda *xs: model(list(xs) if len(xs) > 1 else xs[0], training=False))
    frozen = convert_variables_to_constants_v2(fn.get_concrete_function(*specs))
    return frozen.graph.as_graph_def(), [t.name for t in frozen.inputs], [t.name for t in frozen.outputs]


def run_graph(gd, in_names, out_names, inputs):
    g = tf.Graph()
    with g.as_default():
        tf.graph_util.import_graph_def(gd, name="")
    with tf.compat.v1.Session(graph=g) as s:
        return s.run(out_names, dict(zip(in_names, inputs)))


def fp16_rounded_graph(gd, out_names):
    """What fp16 itself costs: every float tensor (constants and placeholders included) goes through
    Cast(half) -> Cast(float) before its consumers read it, so each op computes in fp32 on fp16-rounded
    operands; returns the rewritten GraphDef and the names of the rounded outputs."""
    g = tf.Graph()
    with g.as_default():
        tf.graph_util.import_graph_def(gd, name="")
    new = tf.compat.v1.GraphDef()
    new.CopyFrom(gd)
    rounded = {}
    for op in g.get_operations():
        for k, t in enumerate(op.outputs):
            if t.dtype != tf.float32:
                continue
            base = f"{op.name}__r16_{k}"
            h = new.node.add(name=f"{base}_h", op="Cast", input=[t.name])
            h.attr["SrcT"].type, h.attr["DstT"].type = tf.float32.as_datatype_enum, tf.float16.as_datatype_enum
            f = new.node.add(name=base, op="Cast", input=[f"{base}_h"])
            f.attr["SrcT"].type, f.attr["DstT"].type = tf.float16.as_datatype_enum, tf.float32.as_datatype_enum
            rounded[t.name] = base + ":0"
            if k == 0:
                rounded[op.name] = base + ":0"
    for n in new.node:
        if "__r16_" in n.name:
            continue
        for i, ref in enumerate(n.input):
            if not ref.startswith("^") and ref in rounded:
                n.input[i] = rounded[ref]
    return new, [rounded.get(o, o) for o in out_names]


MODELS = {"mha_encoder": mha_encoder, "convnext": convnext, "regnet": regnet, "unet": unet,
          "conv1d_text": conv1d_text, "mobilenet_v2": mobilenet_v2, "mobilenet_v3_small": mobilenet_v3_small}


def make(flavour: str, base: str, build) -> None:
    if flavour == "keras3":
        import keras as k
    else:
        import tf_keras as k
    name = f"{flavour}_{base}"
    k.utils.set_random_seed(0)
    model, inputs = build(k)
    _randomize(model)
    ref = model(inputs if len(inputs) > 1 else inputs[0], training=False)
    ref = [np.asarray(r) for r in (ref if isinstance(ref, (list, tuple)) else [ref])]
    gd, in_names, out_names = freeze(model, inputs)
    got = run_graph(gd, in_names, out_names, inputs)
    errs = [rel_err(a, r) for a, r in zip(got, ref)]
    if max(errs) > 1e-4:
        print(f"{name}: the frozen graph differs from Keras by {max(errs):.2e}; not written", flush=True)
        return
    g16, o16 = fp16_rounded_graph(gd, out_names)
    emu = run_graph(g16, in_names, o16, inputs)
    ops = sorted({n.op for n in gd.node})
    save_fixture(name, gd.SerializeToString(deterministic=True), "pb", inputs, ref, emu, {
        "framework": "tf", "source": f"{'Keras 3' if flavour == 'keras3' else 'tf-keras'} {k.__version__} "
                                     f"{base} (random weights, tiny config)",
        "exporter": f"tf.function + convert_variables_to_constants_v2 (TensorFlow {tf.__version__})",
        "inputs": [n.split(":")[0] for n in in_names], "outputs": out_names, "input_format": "NHWC",
        "tf_ops": ops, "emu16_err": [rel_err(e, r) for e, r in zip(emu, ref)], "keras_vs_frozen_err": max(errs)})


def main(argv: list[str]) -> None:
    for flavour in ("keras3", "tf_keras"):
        for base, fn in MODELS.items():
            if argv and base not in argv and f"{flavour}_{base}" not in argv:
                continue
            make(flavour, base, fn)


if __name__ == "__main__":
    main(sys.argv[1:])
