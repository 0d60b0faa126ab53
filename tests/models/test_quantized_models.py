"""Quantized models made with onnxruntime.quantization from real CNN graphs (onnx's light SqueezeNet and ShuffleNet,
random weights) and a transformer: static QDQ (per-channel int8 weights, uint8 activations), the QOperator format
(QLinearConv / QLinearMatMul and onnxruntime's com.microsoft contrib ops; also the committed fixtures of
tests/data/quantized) and dynamic quantization (DynamicQuantizeLinear + MatMulInteger). In every precision mode the
quantized arithmetic stays in its model dtype (passes/precision.quantized_region): the outputs equal onnx's
reference and are within one quantization step of onnxruntime's.

The models are quantized with reduce_range=True (7-bit weights), onnxruntime's advice for CPUs without VNNI: on
such a CPU (this project's CI machines) its u8s8 kernels otherwise saturate int16 pair sums (VPMADDUBSW), and
onnxruntime itself is then up to 70 % of the output scale away from onnx's reference on ShuffleNet."""
from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper, version_converter
from onnx.reference import ReferenceEvaluator

import atc_py
from bench.light_models import write_all
from om_run.load.loader import load_model
from om_run.sim.host import Simulation
from tests.helpers import MODELS
from tools.real_models.checks import output_steps, scale_tensors

MODES = ("must_keep_origin_dtype", "allow_fp32_to_fp16", "force_fp16")


def _opset13(path, out):
    """The light models are opset 8 with IR 3 (initializers not listed as inputs): what the quantizer takes."""
    m = onnx.load(str(path))
    names = {i.name for i in m.graph.input}
    for t in m.graph.initializer:
        if t.name not in names:
            m.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    m = version_converter.convert_version(m, 13)
    inits = {t.name for t in m.graph.initializer}
    real = [i for i in m.graph.input if i.name not in inits]
    del m.graph.input[:]
    m.graph.input.extend(real)
    m.ir_version = 8
    onnx.save(m, str(out))
    return out


def _static_qdq(src, out, rng):
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    m = onnx.load(str(src))
    inp = m.graph.input[0]
    shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    batches = iter([{inp.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

    class Reader(CalibrationDataReader):
        def get_next(self):
            return next(batches, None)
    quantize_static(str(src), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8, reduce_range=True)
    q = onnx.load(str(out))
    for op in q.opset_import:        # onnx's reference implements DequantizeLinear from opset 19 (same semantics)
        if op.domain in ("", "ai.onnx"):
            op.version = 21
    q.ir_version = 10
    return q


def _feeds(m, rng):
    inits = {t.name for t in m.graph.initializer}
    feeds = {}
    for i in m.graph.input:
        if i.name in inits:
            continue
        shape = [d.dim_value or 1 for d in i.type.tensor_type.shape.dim]
        if i.type.tensor_type.elem_type == onnx.TensorProto.INT64:
            feeds[i.name] = rng.integers(0, 50, shape).astype(np.int64)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def _run(m, feeds, mode, tmp_path):
    res = atc_py.build(m, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": mode})
    p = tmp_path / f"{mode}.om"
    p.write_bytes(res.om)
    with np.errstate(all="ignore"):
        return Simulation(load_model(str(p))).run(list(feeds.values()))[0]


def _output_step(m) -> float:
    """The quantization step of the model's output: the scale of the DequantizeLinear that produces it."""
    prod = {o: n for n in m.graph.node for o in n.output}
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    node = prod[m.graph.output[0].name]
    while node.op_type != "DequantizeLinear":
        node = prod[node.input[0]]
    return float(np.max(inits[node.input[1]]))


@pytest.mark.heavy
@pytest.mark.parametrize("name", ["squeezenet", "shufflenet"])
def test_static_qdq_cnns_match_in_every_precision_mode(name, tmp_path):
    rng = np.random.default_rng(0)
    src = write_all(tmp_path, (name,), signed=True)[name]
    q = _static_qdq(_opset13(src, tmp_path / f"{name}13.onnx"), tmp_path / f"{name}_qdq.onnx", rng)
    feeds = _feeds(q, np.random.default_rng(3))
    want_ort = ort.InferenceSession(q.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    want_ref = ReferenceEvaluator(q).run(None, feeds)[0]
    step = _output_step(q)
    for mode in MODES:
        got = _run(q, feeds, mode, tmp_path)[0]
        np.testing.assert_allclose(got, want_ref, rtol=0, atol=step * 1e-3, err_msg=mode)   # the reference's bits
        assert np.abs(got - want_ort).max() <= step * 1.001, mode                            # one step of onnxruntime


def test_quantized_ops_keep_their_dtype_under_force_fp16(tmp_path):
    """The QDQ convolutions and the quant ops stay fp32 (no Cast to fp16 in front of them); the model's float ops
    outside the quantized sections still go to fp16."""
    rng = np.random.default_rng(0)
    src = write_all(tmp_path, ("squeezenet",), signed=True)["squeezenet"]
    q = _static_qdq(_opset13(src, tmp_path / "sq13.onnx"), tmp_path / "sq_qdq.onnx", rng)
    res = atc_py.build(q, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "force_fp16"})
    convs = [n for n in res.graph.nodes if n.op_type == "Conv2D"]
    assert convs and all(v.desc.dtype == "float32" for n in convs for v in n.inputs[:2] if v is not None)
    quant = [n for n in res.graph.nodes if n.op_type in ("AscendQuantV2", "AscendAntiQuantV2")]
    assert quant and all(n.outputs[0].desc.dtype != "float16" for n in quant)


def test_dynamic_quantized_transformer(tmp_path):
    """DynamicQuantizeLinear + MatMulInteger: exact against onnx's reference in fp32, within 1 % of the output's
    scale in the default (fp16) build."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    out = tmp_path / "tr_dyn.onnx"
    quantize_dynamic(str(MODELS / "small_transformer.onnx"), str(out), weight_type=QuantType.QInt8)
    m = onnx.load(str(out))
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= {n.op_type for n in m.graph.node}
    feeds = _feeds(m, np.random.default_rng(3))
    want = ReferenceEvaluator(m).run(None, feeds)[0]
    scale = np.abs(want).max()
    np.testing.assert_allclose(_run(m, feeds, "must_keep_origin_dtype", tmp_path)[0], want, rtol=1e-5, atol=1e-5 * scale)
    assert np.abs(_run(m, feeds, "force_fp16", tmp_path)[0] - want).max() <= 0.01 * scale


REAL = MODELS.parent / "tests" / "data" / "real_models"


@pytest.mark.heavy
def test_qdq_segmentation_and_a_dynamically_quantized_vit(tmp_path):
    """torchvision's DeepLabV3 (static QDQ, calibrated on its saved input) and Hugging Face's ViT (dynamic
    quantization of every MatMul on 3-D activations), from the real-model fixtures: the fp32 build gives onnx's
    reference, the default build stays within 1 % of the output's scale."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )
    x_seg = np.load(REAL / "tv_deeplabv3.opset17.npz")["in_0"]
    batches = iter([{"x": x_seg}, {"x": x_seg * 0.5}])

    class Reader(CalibrationDataReader):
        def get_next(self):
            return next(batches, None)
    seg = tmp_path / "seg.onnx"
    quantize_static(str(REAL / "tv_deeplabv3.opset17.onnx"), str(seg), Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=True, weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8, reduce_range=True)
    vit = tmp_path / "vit.onnx"
    quantize_dynamic(str(REAL / "hf_vit.sdpa.opset17.onnx"), str(vit), weight_type=QuantType.QInt8)
    for path, x in ((seg, x_seg), (vit, np.load(REAL / "hf_vit.sdpa.opset17.npz")["in_0"])):
        m = onnx.load(str(path))
        for op in m.opset_import:     # onnx's reference implements DequantizeLinear from opset 19 (same semantics)
            if op.domain in ("", "ai.onnx"):
                op.version = max(op.version, 21)
        m.ir_version = 10
        name = m.graph.input[0].name
        shape = {"input_shape": f"{name}:{','.join(map(str, x.shape))}"}
        want = ReferenceEvaluator(m).run(None, {name: x})
        for mode, tol in (("must_keep_origin_dtype", 1e-5), ("force_fp16", 1e-2)):
            res = atc_py.build(m, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": mode, **shape})
            p = tmp_path / f"{path.stem}_{mode}.om"
            p.write_bytes(res.om)
            with np.errstate(all="ignore"):
                outs, _ = Simulation(load_model(str(p))).run([x])
            for g, w in zip(outs, want):
                assert np.abs(g - w).max() <= tol * np.abs(w).max(), (path.name, mode)


def test_a_dynamically_quantized_kv_decoder_generates_the_reference_tokens(tmp_path):
    """A decoder with a KV cache (tools/kv_decoder.py, static cache), every MatMul dynamically quantized: om-run
    --generate's greedy tokens equal those of onnx's reference run of the same quantized model, step by step."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from om_run.generate.decode import Decoder, decoder_io, generate
    from tools.kv_decoder import KvShape, build
    shape = KvShape(layers=1, hidden=32, heads=2, intermediate=48, vocab=64, max_cache=12)
    src, out = tmp_path / "dec.onnx", tmp_path / "dec_q.onnx"
    onnx.save(build(shape, "static", seed=5), src)
    quantize_dynamic(str(src), str(out), weight_type=QuantType.QInt8)
    q = onnx.load(str(out))
    assert "MatMulInteger" in {n.op_type for n in q.graph.node}
    for op in q.opset_import:     # onnx's reference implements DequantizeLinear from opset 19 (same semantics)
        if op.domain in ("", "ai.onnx"):
            op.version = max(op.version, 21)
    q.ir_version = 10
    n, d = shape.heads, shape.head_dim
    past = [f"past_key_values.0.{io}" for io in ("key", "value")]
    dims = ";".join(["input_ids:1,1", "position_ids:1,1", "cache_position:1"] + [f"{p}:1,{n},12,{d}" for p in past])
    res = atc_py.build(q, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype",
                           "input_shape": dims})
    om = tmp_path / "dec_q.om"
    om.write_bytes(res.om)
    model = load_model(str(om))
    decoder = Decoder(model, decoder_io(model, str(om)))
    sim = Simulation(model)
    with np.errstate(all="ignore"):
        got = generate(decoder, [3, 9, 27], 5, sim.run).tokens
    ref = ReferenceEvaluator(q)
    names = [i.name for i in q.graph.input]
    want, cache = [], {p: np.zeros((1, n, 12, d), np.float32) for p in past}
    ids = [3, 9, 27]
    for pos in range(3 + 5 - 1):
        tok = ids[pos] if pos < len(ids) else want[-1]
        feeds = {"input_ids": np.array([[tok]], np.int64), "position_ids": np.array([[pos]], np.int64),
                 "cache_position": np.array([pos], np.int64), **cache}
        outs = dict(zip([o.name for o in q.graph.output], ref.run(None, {k: feeds[k] for k in names})))
        cache = {p: outs[p.replace("past_key_values", "present")] for p in past}
        if pos >= len(ids) - 1:
            want.append(int(np.argmax(outs["logits"][0, -1])))
    assert got == want


QUANTIZED = MODELS.parent / "tests" / "data" / "quantized"
FIXTURES = json.loads((QUANTIZED / "manifest.json").read_text())


def qoperator_fixture(name: str):
    entry = FIXTURES[name]
    z = np.load(QUANTIZED / f"{name}.npz")
    return entry, [z[f"in_{k}"] for k in range(len(entry["inputs"]))], \
        [z[f"out_{k}"] for k in range(len(entry["outputs"]))]


@pytest.mark.parametrize("name", sorted(n for n, e in FIXTURES.items() if e["format"] == "QOperator"))
def test_qoperator_fixtures_match_onnxruntime(name, tmp_path):
    """torchvision CNNs and Hugging Face encoders quantized by onnxruntime in the QOperator format
    (tools/real_models/quantized_models.py: QLinearConv, QLinearMatMul and the com.microsoft contrib ops): the fp32
    and the default build give onnxruntime's outputs within one quantization step."""
    entry, inputs, want = qoperator_fixture(name)
    m = onnx.load(str(QUANTIZED / entry["file"]))
    assert {n.op_type for n in m.graph.node if n.domain == "com.microsoft"} == set(entry["contrib_ops"])
    steps = output_steps(m)
    shape = ";".join(f"{n}:{','.join(map(str, x.shape))}" for n, x in zip(entry["inputs"], inputs))
    for mode in ("must_keep_origin_dtype", "force_fp16"):
        res = atc_py.build(str(QUANTIZED / entry["file"]), {"ge.socVersion": "Ascend910B1",
                                                             "ge.exec.precision_mode": mode, "input_shape": shape})
        p = tmp_path / f"{mode}.om"
        p.write_bytes(res.om)
        with np.errstate(all="ignore"):
            outs, _ = Simulation(load_model(str(p))).run(inputs)
        for k, (g, w, step) in enumerate(zip(outs, want, steps)):
            assert g.shape == w.shape, (mode, k)
            assert np.abs(g.astype(np.float64) - w).max() <= step * 1.001, (mode, k)


def _static_qoperator(src, out, rng):
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    inp = onnx.load(str(src)).graph.input[0]
    shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    batches = iter([{inp.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

    class Reader(CalibrationDataReader):
        def get_next(self):
            return next(batches, None)
    quantize_static(str(src), str(out), Reader(), quant_format=QuantFormat.QOperator, per_channel=True,
                    weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8, reduce_range=True)
    return onnx.load(str(out))


@pytest.mark.heavy
@pytest.mark.parametrize("name", ["squeezenet", "shufflenet"])
def test_qoperator_cnns_give_onnxruntime_bits(name, tmp_path):
    """The QDQ test's SqueezeNet and ShuffleNet quantized in the QOperator format instead (QLinearConcat,
    QLinearAveragePool, QLinearGlobalAveragePool, QLinearSoftmax, QGemm): onnxruntime's very outputs in every
    precision mode."""
    src = write_all(tmp_path, (name,), signed=True)[name]
    q = _static_qoperator(_opset13(src, tmp_path / f"{name}13.onnx"), tmp_path / f"{name}_qop.onnx",
                          np.random.default_rng(0))
    assert {n.op_type for n in q.graph.node if n.domain == "com.microsoft"} >= {"QLinearConcat", "QLinearSoftmax"}
    feeds = _feeds(q, np.random.default_rng(3))
    want = ort.InferenceSession(q.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for mode in MODES:
        assert np.array_equal(_run(q, feeds, mode, tmp_path)[0], want), mode


def quantized_tensors(model) -> list[str]:
    """Every tensor a quantizing op writes: each QuantizeLinear's, and each DynamicQuantizeLinear's values, scale
    and zero point."""
    return [t for n in model.graph.node if n.op_type in ("QuantizeLinear", "DynamicQuantizeLinear")
            for t in n.output if t]


def _build_run(model, inputs, shape: str, mode: str, tmp_path):
    res = atc_py.build(model, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": mode, "input_shape": shape})
    p = tmp_path / f"{mode}.om"
    p.write_bytes(res.om)
    with np.errstate(all="ignore"):
        return Simulation(load_model(str(p))).run(inputs)[0]


@pytest.mark.parametrize("name", sorted(n for n, e in FIXTURES.items() if e["format"] in ("QDQ", "dynamic")))
def test_quantized_standins_give_onnx_reference_bits_in_fp32(name, tmp_path):
    """RepVGG and LR-ASPP MobileNetV3 quantized statically (QDQ), DeiT and ALBERT dynamically
    (tools/real_models/quantized_models.py --standins). In the fp32 build every quantized tensor has onnx
    reference's bits (each QuantizeLinear's output; each DynamicQuantizeLinear's values, scale and zero point), and
    so do the outputs: a QDQ model's are DequantizeLinear's, a dynamic model's its last integer matmul's sums times
    their scale plus a bias (DeiT: the mean of two such heads), elementwise ops in the reference's order — no
    tolerance either. onnxruntime's outputs (all optimisations on: its fused int8 kernels requantize an int32 sum with
    one float multiplier, resize uint8 data, normalise with their own LayerNorm arithmetic) are within one
    quantization step of each output. The default build keeps the quantized sections in fp32: a QDQ model's outputs
    stay within a step; a dynamic model's fp16 ops between its quantizations move them by up to 2 % of their
    scale."""
    entry, inputs, want_ort = qoperator_fixture(name)
    m = onnx.load(str(QUANTIZED / entry["file"]))
    feeds = dict(zip(entry["inputs"], inputs))
    shape = ";".join(f"{n}:{','.join(map(str, x.shape))}" for n, x in feeds.items())
    exposed = onnx.ModelProto()
    exposed.CopyFrom(m)
    inner = quantized_tensors(m) + scale_tensors(m)
    exposed.graph.output.extend(onnx.ValueInfoProto(name=t) for t in inner)
    ref = ReferenceEvaluator(exposed).run(None, feeds)
    values = dict(zip([o.name for o in exposed.graph.output], ref))
    steps = output_steps(m, values)
    n_out = len(entry["outputs"])
    assert len(steps) == n_out and inner
    got = _build_run(exposed, inputs, shape, "force_fp32", tmp_path)
    for t, g, w in zip(inner, got[n_out:], ref[n_out:]):
        np.testing.assert_array_equal(g, w, err_msg=t)
    got = _build_run(m, inputs, shape, "force_fp32", tmp_path)
    for k, (g, w, o, step) in enumerate(zip(got, ref, want_ort, steps)):
        np.testing.assert_array_equal(g, w, err_msg=f"output {k}")
        assert np.abs(g.astype(np.float64) - o).max() <= step * 1.001, (k, step)
    got = _build_run(m, inputs, shape, "force_fp16", tmp_path)
    for k, (g, w, step) in enumerate(zip(got, ref, steps)):
        tol = step * 1.001 if entry["format"] == "QDQ" else 0.02 * np.abs(w).max()
        assert np.abs(g.astype(np.float64) - w).max() <= tol, (k, tol)
