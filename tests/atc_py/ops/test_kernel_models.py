"""The kernel and format models the whole-model fidelity rests on: how CANN lays grouped and
small-channel filters out for the cube, what a batched matmul and a gather read, which ops keep 5HD, and the
ModelZoo skeletons of bench/fidelity/zoo.py."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.ir.graph import TensorDesc
from atc_py.ops import get_op
from atc_py.ops.conv_pool import group_extension
from atc_py.ops.core.base import TilingContext, cores_for
from atc_py.platform.soc import load_soc
from bench.fidelity import zoo
from om_run.sim.program import op_attrs
from tests.helpers.om_files import om_ops

SOC = load_soc("Ascend310P3")


def _ctx(ins, outs, attrs):
    return TilingContext([TensorDesc(s, "float16") for s in ins], [TensorDesc(s, "float16") for s in outs], attrs,
                         SOC, {}, 1.0)


def test_group_extension_is_canns_fractal_z_layout_of_groups():
    assert group_extension(1, 1, 96, 16, 16) == (6, 16, 16)        # depthwise: 16 channels per block
    assert group_extension(24, 24, 8, 16, 16) == (4, 48, 48)       # groups of 24: two per block, padded to 48
    assert group_extension(3, 64, 1, 16, 16) == (1, 16, 64)        # no groups: the channels padded to C0
    assert group_extension(32, 32, 4, 16, 16) == (4, 32, 32)       # aligned groups stay apart


def test_a_depthwise_convolution_does_9_k_fractals_per_16_channels():
    conv = get_op("Conv2D")
    ctx = _ctx([(1, 64, 32, 32), (64, 1, 3, 3)], [(1, 64, 32, 32)],
               {"strides": [1, 1, 1, 1], "pads": [1, 1, 1, 1], "groups": 64})
    assert conv.work(ctx).fractals == 4 * (32 * 32 // 16) * 9       # 4 blocks x M fractals x 9 taps x 1 N


def test_a_small_channel_convolution_packs_taps_and_4_channels_along_k():
    conv = get_op("Conv2D")
    base = {"strides": [1, 1, 2, 2], "pads": [3, 3, 3, 3], "groups": 1}
    ins, outs = [(1, 3, 224, 224), (64, 3, 7, 7)], [(1, 64, 112, 112)]
    m = 112 * 112 // 16
    assert conv.work(_ctx(ins, outs, base)).fractals == m * 49 * 4          # 16 channels per tap
    assert conv.work(_ctx(ins, outs, {**base, "_small_channel": True})).fractals == m * 13 * 4


def test_a_strided_one_row_filter_reads_only_the_rows_it_uses():
    """CANN's strideh_opti: a 1x1 stride-2 convolution without padding loads every other input row, so a
    ResNet downsample reads half its input; with padding, a 3-row filter or C04 it reads all of it."""
    conv = get_op("Conv2D")
    x, w, y = (64, 256, 56, 56), (512, 256, 1, 1), (64, 512, 28, 28)
    base = {"strides": [1, 1, 2, 2], "pads": [0, 0, 0, 0], "groups": 1}
    x_bytes, rest = int(np.prod(x)) * 2, (int(np.prod(w)) + int(np.prod(y))) * 2
    skipping = conv.work(_ctx([x, w], [y], base)).bytes - rest
    assert x_bytes // 2 <= skipping < x_bytes * 0.55            # half the rows, the filter reread per block aside
    padded = conv.work(_ctx([x, w], [(64, 512, 29, 29)], {**base, "pads": [1, 1, 1, 1]})).bytes
    assert padded - (int(np.prod(w)) + 64 * 512 * 29 * 29) * 2 >= x_bytes
    three = conv.work(_ctx([x, (512, 256, 3, 3)], [(64, 512, 27, 27)], base)).bytes
    assert three >= x_bytes
    small = conv.work(_ctx([x, w], [y], {**base, "_small_channel": True})).bytes
    assert small - rest >= x_bytes


def test_the_small_channel_mark_reaches_om_run(tmp_path):
    w = numpy_helper.from_array(np.ones((16, 3, 3, 3), np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1] * 4)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    res = atc_py.build(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
                       {"ge.socVersion": "Ascend310P3", "ge.enableSmallChannel": "1"})
    conv = next(op for op in om_ops(res.om) if op.type == "Conv2D")
    assert op_attrs(conv).get("_small_channel") is True


def test_a_batched_matmul_reads_each_batchs_b_for_its_own_rows():
    """Attention's scores: 384 heads x [197, 64] x [64, 197]; every B is read once per L1 tile of its own rows,
    not by every row block of the whole batch (3 GB before)."""
    bmm = get_op("BatchMatMulV2")
    a, b, y = (384, 197, 64), (384, 64, 197), (384, 197, 197)
    w = bmm.work(_ctx([a, b], [y], {}))
    compulsory = 2 * (np.prod(a) + np.prod(b) + np.prod(y))
    assert w.bytes <= 2 * compulsory


def test_a_gather_reads_the_rows_it_selects():
    gather = get_op("GatherV2D")
    ctx = TilingContext([TensorDesc((3, 32, 197, 768), "float16"), TensorDesc((), "int64")],
                        [TensorDesc((32, 197, 768), "float16")], {"axis": 0}, SOC, {}, 1.0)
    assert gather.work(ctx).bytes == 2 * 32 * 197 * 768 * 2 + 8


def _concat_model(c1: int, c2: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    ws = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
          for n, s in (("w1", (c1, 8, 3, 3)), ("w2", (c2, 8, 3, 3)), ("w3", (8, c1 + c2, 1, 1)))]
    bn = [numpy_helper.from_array(v.astype(np.float32), n) for n, v in
          (("s", np.ones(c1 + c2)), ("b", np.zeros(c1 + c2)), ("m", np.zeros(c1 + c2)), ("v", np.ones(c1 + c2)))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1] * 4),
             helper.make_node("Conv", ["x", "w2"], ["b2"], pads=[1] * 4),
             helper.make_node("Concat", ["a", "b2"], ["c"], axis=1),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),   # pre-activation: not folded
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("Conv", ["r", "w3"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], ws + bn)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_a_channel_concat_and_a_batch_norm_stay_5hd_when_the_channels_fill_c0_blocks():
    aligned = om_ops(atc_py.build(_concat_model(16, 32), {"ge.socVersion": "Ascend310P3"}).om)
    assert {op.output_desc[0].layout for op in aligned if op.type in ("ConcatD", "BNInfer")} == {"NC1HWC0"}
    assert sum(op.type == "TransData" for op in aligned) == 2          # the model's input and output only
    ragged = om_ops(atc_py.build(_concat_model(12, 20), {"ge.socVersion": "Ascend310P3"}).om)
    assert next(op for op in ragged if op.type == "ConcatD").output_desc[0].layout == "NCHW"
    assert sum(op.type == "TransData" for op in ragged) > 2


def test_a_batch_1_concat_splits_each_inputs_columns_over_every_core():
    """CANN's ConcatD (concat_tik) gives every AI Core its share of each input's columns in every row: a DenseNet
    concatenation at batch 1 runs on all 8 cores of a 310P3, not on one per batch row."""
    concat = get_op("ConcatD")
    attrs = {"concat_dim": 1}

    def tiling(n: int, c1: int, c2: int, hw: int = 28, soc=SOC):
        ins, outs = [(n, c1, hw, hw), (n, c2, hw, hw)], [(n, c1 + c2, hw, hw)]
        ctx = TilingContext([TensorDesc(s, "float16") for s in ins], [TensorDesc(s, "float16") for s in outs],
                            attrs, soc, {}, 1.0)
        res = concat.tiling(ctx)
        return res.block_dim, concat.decode_tiling(res.tiling_data, attrs)["rows_per_block"]

    cores = cores_for(concat, SOC)
    assert tiling(1, 64, 32) == (cores, 1)                          # batch 1: columns over every core
    assert tiling(4, 64, 32) == (cores, 4)                          # every block takes all 4 rows
    assert tiling(1, 2, 2, hw=4) == (1, 1)                          # 32 columns: less than a block per core
    b1 = load_soc("Ascend910B1")
    assert tiling(1, 64, 32, soc=b1)[0] == cores_for(concat, b1) == b1.vector_cores


def test_5hd_concat_and_batch_norm_change_no_number(tmp_path):
    import onnxruntime as ort

    from om_run.load.loader import load_model
    from om_run.sim.host import Simulation
    model = _concat_model(16, 32)
    res = atc_py.build(model, {"ge.socVersion": "Ascend310P3", "ge.exec.precision_mode": "force_fp32"})
    p = tmp_path / "m.om"
    p.write_bytes(res.om)
    x = np.random.default_rng(1).standard_normal((1, 8, 8, 8)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = Simulation(load_model(str(p))).run([x])[0][0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_zoo_skeletons_hold_no_weights_and_refill_the_same_every_time():
    m = onnx.load(str(zoo.ZOO_DIR / "squeezenet1_1.onnx"))
    assert any(p.key == zoo.STRIPPED for p in m.metadata_props)
    big = [t for t in m.graph.initializer if int(np.prod(t.dims)) > zoo.SMALL and t.data_type == TensorProto.FLOAT]
    assert big and not any(t.raw_data or t.float_data for t in big)
    a, b = zoo.load("squeezenet1_1", seed=1), zoo.load("squeezenet1_1", seed=1)
    assert [t.raw_data for t in a.graph.initializer] == [t.raw_data for t in b.graph.initializer]
    assert all(len(t.raw_data) == 4 * int(np.prod(t.dims)) for t in a.graph.initializer if t.name in
               {x.name for x in big})
