"""Compile speed on real-size models, printed by `make bench`:

* the onnx `light` ResNet-50 and a transformer with >= 100 MB of weights (built here with onnx.helper and
  numpy: PyTorch is not a dependency), each compiled by atc-py (to .om bytes written to disk) next to
  onnxruntime's offline optimisation of the same file and next to `onnx.load` + writing the weights.
Targets: atc-py <= onnxruntime; within 2x of load+write for the large model. Ratios are printed, not asserted.
"""
from __future__ import annotations

import pathlib
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import atc_py

REPEAT = 5   # best of: this machine's wall times vary by tens of percent from run to run
LIGHT_RESNET = pathlib.Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"


def pruned(model, d) -> str:
    """A copy of the model without initializers no node reads (the shipped light ResNet-50 has one, which
    onnxruntime warns about on every session; both sides then compile the same graph)."""
    m = onnx.load(str(model))
    used = {i for n in m.graph.node for i in n.input}
    live = [t for t in m.graph.initializer if t.name in used]
    del m.graph.initializer[:]
    m.graph.initializer.extend(live)
    inputs = [i for i in m.graph.input if i.name in used]
    del m.graph.input[:]
    m.graph.input.extend(inputs)
    path = str(pathlib.Path(d) / "light_resnet50_pruned.onnx")
    onnx.save(m, path)
    return path


def transformer(path: pathlib.Path, layers: int = 6, hidden: int = 1024, ffn: int = 1536, seq: int = 16) -> int:
    """A decoder-only stack (LayerNorm, QKV/O projections, scaled-dot attention, GELU MLP, residuals);
    returns the weight bytes. 6 layers x (4 h^2 + 2 h ffn) fp32 = 151 MB with the defaults."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    x = "x"

    def w(name, *shape):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.02).astype(np.float32), name))
        return name

    def node(op, ins, **attrs):
        out = f"t{len(nodes)}"
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out
    scale = w("scale", 1)
    inits[-1] = numpy_helper.from_array(np.array([hidden ** -0.5], np.float32), "scale")
    for i in range(layers):
        h = node("LayerNormalization", [x, w(f"ln{i}_g", hidden), w(f"ln{i}_b", hidden)], axis=-1)
        q, k, v = (node("MatMul", [h, w(f"l{i}_{n}", hidden, hidden)]) for n in "qkv")
        s = node("Mul", [node("MatMul", [q, node("Transpose", [k], perm=[1, 0])]), scale])
        a = node("MatMul", [node("Softmax", [s], axis=-1), v])
        x = node("Add", [x, node("Add", [node("MatMul", [a, w(f"l{i}_o", hidden, hidden)]), w(f"l{i}_ob", hidden)])])
        h = node("LayerNormalization", [x, w(f"ln{i}_g2", hidden), w(f"ln{i}_b2", hidden)], axis=-1)
        up = node("Add", [node("MatMul", [h, w(f"l{i}_up", hidden, ffn)]), w(f"l{i}_upb", ffn)])
        g = node("Mul", [up, node("Sigmoid", [node("Mul", [up, w(f"l{i}_gelu", 1)])])])   # sigmoid-GELU
        x = node("Add", [x, node("MatMul", [g, w(f"l{i}_down", ffn, hidden)])])
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    graph = helper.make_graph(nodes, "transformer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, hidden])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [seq, hidden])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8   # what onnxruntime of any recent version loads
    onnx.save(model, str(path))
    return sum(numpy_helper.to_array(t).nbytes for t in inits)


def timed(fn, out: pathlib.Path) -> float:
    """Wall time of fn writing `out`, which does not exist before (no tool pays for freeing an old file)."""
    out.unlink(missing_ok=True)
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def atc_compile(model: pathlib.Path, out: pathlib.Path, precision: str = "") -> None:
    options = {"ge.socVersion": "Ascend910B1"}
    if precision:
        options["ge.exec.precision_mode"] = precision
    atc_py.build(str(model), options).save(out)   # as the CLI writes it


def ort_offline(model: pathlib.Path, out: pathlib.Path) -> None:
    """onnxruntime's offline optimisation. The session never runs, so its intra-op threads are told not to
    spin: spinning threads would only steal this 2-core machine from whatever is measured next."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = str(out)
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])


def load_and_write(model: pathlib.Path, out: pathlib.Path) -> None:
    m = onnx.load(str(model))
    with open(out, "wb") as f:
        for t in m.graph.initializer:
            f.write(numpy_helper.to_array(t).tobytes())


def run(d: pathlib.Path) -> None:
    big = d / "transformer.onnx"
    nbytes = transformer(big)
    print(f"{'compile':<24} {'atc-py s':>9} {'ort-opt s':>9} {'ratio':>6} | {'load+write s':>12} {'ratio':>6} | "
          f"{'fp32 atc-py s':>13} {'ratio':>6}")
    light = pathlib.Path(pruned(LIGHT_RESNET, d))
    for name, path in (("light ResNet-50", light), (f"transformer {nbytes / 1e6:.0f} MB", big)):
        a = min(timed(lambda: atc_compile(path, d / "m.om"), d / "m.om") for _ in range(REPEAT))
        o = min(timed(lambda: ort_offline(path, d / "m.opt.onnx"), d / "m.opt.onnx") for _ in range(REPEAT))
        lw = min(timed(lambda: load_and_write(path, d / "w.bin"), d / "w.bin") for _ in range(REPEAT))
        k = min(timed(lambda: atc_compile(path, d / "m.om", "must_keep_origin_dtype"), d / "m.om")
                for _ in range(REPEAT))
        print(f"{name:<24} {a:>9.2f} {o:>9.2f} {a / o:>6.2f} | {lw:>12.2f} {a / lw:>6.2f} | {k:>13.2f} {k / o:>6.2f}")
        for f in ("m.om", "m.opt.onnx", "w.bin"):
            (d / f).unlink(missing_ok=True)
    print("targets: atc-py / ort-opt <= 1; atc-py / load+write <= 2 for the large model. atc-py runs ATC's default\n"
          "force_fp16 (cube weights cast to fp16 at compile time, which onnxruntime does not do); the fp32 columns\n"
          "are --precision_mode=must_keep_origin_dtype, ratio against ort-opt\n")


if __name__ == "__main__":
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        run(pathlib.Path(tmp))
