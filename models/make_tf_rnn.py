"""Keras recurrent models frozen both ways, for atc-py's TensorFlow control-flow tests (dev only: needs
TensorFlow, never a runtime or test dependency). `python models/make_tf_rnn.py` in a venv with tensorflow
writes models/tf_rnn/<name>.<form>.pb (form v1: lowered Enter/Exit/Merge/Switch/NextIteration/LoopCond,
v2: one functional While with TensorList ops), plus <name>.npz with the input `x` and TensorFlow's output
`y`. Weights are random (fixed seeds); the files are a few KB each.

Also writes cond.{v1,v2}.pb (tf.cond on a runtime predicate) and calls.pb: a small convolutional model whose convolutions sit in a library function called through
StatefulPartitionedCall (as ConvNeXt / RegNet SavedModels freeze with aggressive_inlining off).
"""
from __future__ import annotations

import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent / "tf_rnn"
B, T, F, H = 2, 6, 4, 8


def _layers(name: str):
    k = tf.keras.layers
    return {"lstm": lambda: k.LSTM(H, return_sequences=True),
            "gru": lambda: k.GRU(H),
            "bilstm": lambda: k.Bidirectional(k.LSTM(H))}[name]()


def _freeze(fn, spec, lower: bool) -> bytes:
    concrete = tf.function(fn).get_concrete_function(spec)
    frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=lower)
    return frozen.graph.as_graph_def().SerializeToString(deterministic=True)


def rnn(name: str, seed: int) -> None:
    tf.keras.utils.set_random_seed(seed)
    inp = tf.keras.Input((T, F), batch_size=B, name="x")
    model = tf.keras.Model(inp, _layers(name)(inp))
    x = np.random.default_rng(seed).standard_normal((B, T, F)).astype(np.float32)
    y = model(x).numpy()
    spec = tf.TensorSpec((B, T, F), tf.float32, name="x")
    for form, lower in (("v2", False), ("v1", True)):
        (OUT / f"{name}.{form}.pb").write_bytes(_freeze(lambda t: model(t), spec, lower))
    np.savez(OUT / f"{name}.npz", x=x, y=y)


def calls() -> None:
    """Two convolutions in a library function (not inlined): StatefulPartitionedCall with attribute f."""
    tf.keras.utils.set_random_seed(7)
    conv1 = tf.keras.layers.Conv2D(4, 3, padding="same", activation="relu")
    conv2 = tf.keras.layers.Conv2D(4, 1)
    inp = tf.keras.Input((8, 8, 3), batch_size=1)
    conv1(inp), conv2(conv1(inp))

    @tf.function(jit_compile=True)       # keeps the block a separate function, with _XlaMustCompile
    def block(t):
        return conv2(conv1(t)) + 1.0

    x = np.random.default_rng(7).standard_normal((1, 8, 8, 3)).astype(np.float32)
    y = block(x).numpy()
    spec = tf.TensorSpec((1, 8, 8, 3), tf.float32, name="x")
    concrete = tf.function(lambda t: block(t) * 2.0).get_concrete_function(spec)
    frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=False, aggressive_inlining=False)
    gd = frozen.graph.as_graph_def()
    assert any(n.op in ("PartitionedCall", "StatefulPartitionedCall") for n in gd.node), "the call was inlined"
    (OUT / "calls.pb").write_bytes(gd.SerializeToString(deterministic=True))
    np.savez(OUT / "calls.npz", x=x, y=y * 2.0)


def cond() -> None:
    """tf.cond on a runtime predicate, frozen both ways (v1: Switch/Merge; v2: StatelessIf), and its outputs
    for an input that takes each branch."""
    w = tf.constant([[0.5, -1.0, 2.0]])

    def f(x):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: tf.nn.relu(x) * w, lambda: tf.tanh(x) - 1.0)
    spec = tf.TensorSpec((2, 3), tf.float32, name="x")
    for form, lower in (("v2", False), ("v1", True)):
        (OUT / f"cond.{form}.pb").write_bytes(_freeze(f, spec, lower))
    rng = np.random.default_rng(11)
    xp, xn = np.abs(rng.standard_normal((2, 3))).astype(np.float32), -np.abs(rng.standard_normal((2, 3))).astype(np.float32)
    np.savez(OUT / "cond.npz", x_then=xp, y_then=f(xp).numpy(), x_else=xn, y_else=f(xn).numpy())


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for k, name in enumerate(("lstm", "gru", "bilstm")):
        rnn(name, 100 + k)
        print(f"wrote models/tf_rnn/{name}.v1.pb, {name}.v2.pb, {name}.npz")
    calls()
    print("wrote models/tf_rnn/calls.pb, calls.npz")
    cond()
    print("wrote models/tf_rnn/cond.v1.pb, cond.v2.pb, cond.npz")


if __name__ == "__main__":
    main()
