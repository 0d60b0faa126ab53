"""Shared by the generators: fixture files, the manifest, and the fp16-cost emulation of an ONNX model."""
from __future__ import annotations

import json
import pathlib

import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "real_models"
MANIFEST = OUT / "manifest.json"


def save_fixture(name: str, model_bytes: bytes, suffix: str, inputs: list[np.ndarray], outputs: list[np.ndarray],
                 emu16: list[np.ndarray], meta: dict) -> None:
    """NAME.<suffix> + NAME.npz, and NAME's entry in manifest.json (other entries kept)."""
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.{suffix}").write_bytes(model_bytes)
    arrays = {f"in_{k}": np.asarray(a) for k, a in enumerate(inputs)}
    arrays.update({f"out_{k}": np.asarray(a) for k, a in enumerate(outputs)})
    arrays.update({f"emu16_{k}": np.asarray(a) for k, a in enumerate(emu16)})
    np.savez_compressed(OUT / f"{name}.npz", **arrays)
    entries = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
    entries[name] = {"file": f"{name}.{suffix}", **meta}
    MANIFEST.write_text(json.dumps(dict(sorted(entries.items())), indent=1) + "\n")
    size = (OUT / f"{name}.{suffix}").stat().st_size + (OUT / f"{name}.npz").stat().st_size
    print(f"{name}: {size / 1024:.0f} KiB", flush=True)


def rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    """max |got - ref| / max |ref|: the error measure of the real-model test."""
    ref = np.asarray(ref, np.float64)
    return float(np.abs(np.asarray(got, np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30))


def fp16_rounded_onnx(model):
    """The model with fp16 storage everywhere: float initializers and Constant values rounded to fp16, and
    every float tensor a node makes (and every float graph input) passed through Cast(fp16) -> Cast(fp32),
    so each op computes in fp32 on fp16-rounded operands, as an fp16 build stores them."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    m = onnx.shape_inference.infer_shapes(model)
    g = m.graph
    floats = {v.name for v in list(g.value_info) + list(g.input) + list(g.output)
              if v.type.tensor_type.elem_type == TensorProto.FLOAT}
    for init in g.initializer:
        if init.data_type == TensorProto.FLOAT:
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16).astype(np.float32),
                                                  init.name))
    inits = {i.name for i in g.initializer}
    nodes, renames = [], {}
    for x in g.input:
        if x.name in floats and x.name not in inits:
            renames[x.name] = f"{x.name}__r16"
            nodes += [helper.make_node("Cast", [x.name], [x.name + "__h"], to=TensorProto.FLOAT16),
                      helper.make_node("Cast", [x.name + "__h"], [renames[x.name]], to=TensorProto.FLOAT)]
    outs = {o.name for o in g.output}
    for n in g.node:
        for k, i in enumerate(n.input):
            if i in renames:
                n.input[k] = renames[i]
        nodes.append(n)
        for k, o in enumerate(n.output):
            if o in floats and o:
                raw = f"{o}__f32"
                n.output[k] = raw
                nodes += [helper.make_node("Cast", [raw], [raw + "_h"], to=TensorProto.FLOAT16),
                          helper.make_node("Cast", [raw + "_h"], [o], to=TensorProto.FLOAT)]
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]
    assert outs == {o.name for o in g.output}
    return m


def run_onnx(model, feeds: dict) -> list[np.ndarray]:
    """onnxruntime with every graph optimisation off (a Cast pair must stay a rounding)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)
