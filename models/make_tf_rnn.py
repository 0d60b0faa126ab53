"""Keras recurrent models frozen both ways, for atc-py's TensorFlow control-flow tests (dev only: needs
TensorFlow, never a runtime or test dependency). `python models/make_tf_rnn.py` in a venv with tensorflow
writes models/tf_rnn/<name>.<form>.pb (form v1: lowered Enter/Exit/Merge/Switch/NextIteration/LoopCond,
v2: one functional While with TensorList ops), plus <name>.npz with the input `x` and TensorFlow's output
`y`. Weights are random (fixed seeds); the files are a few KB each.

Also writes tensor_array.pb (a tf.compat.v1.while_loop RNN over TensorArrays, as tf.compat.v1.nn.dynamic_rnn
freezes: TensorArrayV3 / Scatter / Split / Read / Write / Gather / Concat / Size / Close carrying flow values
through v1 frames), case.pb (tf.switch_case on a runtime branch index: a functional Case), cond.{v1,v2}.pb
(tf.cond on a runtime predicate) and calls.pb: a small convolutional model whose convolutions sit in a library function called through
StatefulPartitionedCall (as ConvNeXt / RegNet SavedModels freeze with aggressive_inlining off).
"""
from __future__ import annotations

import os
import pathlib
import sys

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
    specs = spec if isinstance(spec, tuple) else (spec,)
    concrete = tf.function(fn).get_concrete_function(*specs)
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
    """tf.cond on a runtime predicate with work after it, frozen both ways (v1: Switch/Merge; v2: StatelessIf),
    and its outputs for an input that takes each branch."""
    w = tf.constant([[0.5, -1.0, 2.0]])

    def f(x):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: tf.nn.relu(x) * w, lambda: tf.tanh(x) - 1.0) * 2.0 + x
    spec = tf.TensorSpec((2, 3), tf.float32, name="x")
    for form, lower in (("v2", False), ("v1", True)):
        (OUT / f"cond.{form}.pb").write_bytes(_freeze(f, spec, lower))
    rng = np.random.default_rng(11)
    xp, xn = np.abs(rng.standard_normal((2, 3))).astype(np.float32), -np.abs(rng.standard_normal((2, 3))).astype(np.float32)
    np.savez(OUT / "cond.npz", x_then=xp, y_then=f(xp).numpy(), x_else=xn, y_else=f(xn).numpy())


def tensor_array() -> None:
    """dynamic_rnn's loop written out (tf.compat.v1.nn.rnn_cell needs Keras 2, absent from TF 2.16+): inputs
    unstacked into a TensorArray, a per-step bias split into another, outputs written into a third and read
    back by stack / gather / concat / size; v1 control flow, so the arrays are TensorArrayV3 with flows."""
    rng = np.random.default_rng(21)
    w = (rng.standard_normal((F + H, H)) * 0.4).astype(np.float32)
    b = (rng.standard_normal(H) * 0.1).astype(np.float32)
    tf.compat.v1.disable_control_flow_v2()
    try:
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, (B, T, F), name="x")
            in_ta = tf.TensorArray(tf.float32, size=T, element_shape=(B, F)).unstack(tf.transpose(x, [1, 0, 2]))
            steps = tf.reshape(tf.range(T * H, dtype=tf.float32) * 0.01, (T, H))
            bias_ta = tf.TensorArray(tf.float32, size=T, element_shape=(1, H)).split(steps, [1] * T)
            out_ta = tf.TensorArray(tf.float32, size=T, element_shape=(B, H), clear_after_read=False)

            def body(t, h, ta):
                h2 = tf.tanh(tf.matmul(tf.concat([in_ta.read(t), h], 1), w) + b + bias_ta.read(t))
                return t + 1, h2, ta.write(t, h2)
            _, h_t, ota = tf.compat.v1.while_loop(lambda t, h, ta: t < T, body,
                                                  [tf.constant(0), tf.zeros((B, H)), out_ta])
            outs = [tf.identity(tf.transpose(ota.stack(), [1, 0, 2]), name="y"),
                    tf.identity(ota.concat(), name="y_concat"),
                    tf.identity(ota.gather([T - 1, 0]), name="y_gather"),
                    tf.identity(tf.raw_ops.TensorArraySizeV3(handle=ota.handle, flow_in=ota.flow), name="size"),
                    tf.identity(h_t, name="h")]
            with tf.control_dependencies(outs):
                close = ota.close(name="close")
            xv = np.random.default_rng(21).standard_normal((B, T, F)).astype(np.float32)
            with tf.compat.v1.Session(graph=g) as sess:
                vals = sess.run(outs, {x: xv})
                sess.run(close, {x: xv})
            names = ["y", "y_concat", "y_gather", "size", "h"]
            gd = tf.compat.v1.graph_util.extract_sub_graph(g.as_graph_def(), names + ["close"])
    finally:
        tf.compat.v1.enable_control_flow_v2()
    ops = {n.op for n in gd.node}
    assert {"TensorArrayV3", "TensorArrayScatterV3", "TensorArraySplitV3", "TensorArrayReadV3",
            "TensorArrayWriteV3", "TensorArrayGatherV3", "TensorArrayConcatV3", "TensorArraySizeV3",
            "TensorArrayCloseV3", "LoopCond"} <= ops, ops
    (OUT / "tensor_array.pb").write_bytes(gd.SerializeToString(deterministic=True))
    np.savez(OUT / "tensor_array.npz", x=xv, **{f"y{k}": v for k, v in enumerate(vals)})


def switch_case() -> None:
    """tf.switch_case on a runtime branch index (a functional Case with three branch functions); the outputs
    of every index, and of one out of range (TensorFlow runs the last branch then)."""
    w = tf.constant([[0.5, -1.0, 2.0]])

    def f(i, x):
        return tf.switch_case(i, [lambda: tf.nn.relu(x) * w, lambda: tf.tanh(x) - 1.0, lambda: x * x + w])
    spec = (tf.TensorSpec((), tf.int32, name="i"), tf.TensorSpec((2, 3), tf.float32, name="x"))
    # the traced graph as is: freezing would lower the Case into _SwitchN / Merge (it has no variables)
    gd = tf.function(f).get_concrete_function(*spec).graph.as_graph_def()
    assert any(n.op in ("Case", "StatelessCase") for n in gd.node), "the Case was lowered"
    (OUT / "case.pb").write_bytes(gd.SerializeToString(deterministic=True))
    x = np.random.default_rng(13).standard_normal((2, 3)).astype(np.float32)
    idx = np.array([0, 1, 2, 7], np.int32)
    np.savez(OUT / "case.npz", x=x, i=idx, y=np.stack([f(tf.constant(k), x).numpy() for k in idx]))


MAKERS = {"cond": cond, "tensor_array": tensor_array, "case": switch_case}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    only = sys.argv[1:]
    if only:                    # e.g. `python models/make_tf_rnn.py tensor_array case`: just those
        for name in only:
            MAKERS[name]()
            print(f"wrote models/tf_rnn/{name}.*")
        return
    for k, name in enumerate(("lstm", "gru", "bilstm")):
        rnn(name, 100 + k)
        print(f"wrote models/tf_rnn/{name}.v1.pb, {name}.v2.pb, {name}.npz")
    calls()
    print("wrote models/tf_rnn/calls.pb, calls.npz")
    for name, make in MAKERS.items():
        make()
        print(f"wrote models/tf_rnn/{name}.*")


if __name__ == "__main__":
    main()
