"""Bad AscGraphs: the compiler reports a graph that breaks a rule naming the node and field; om-run rejects a
malformed AscBackend (its graphs, or a launch its tiling data describes) with E30001 before anything runs."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import atc_py
from atc_py.common.errors import AtcError
from atc_py.engines.args import parse
from atc_py.ops.core.base import TilingStruct
from atc_py.proto import ge_ir_pb2 as ge
from atc_py.proto import task_pb2
from tests.helpers.om_files import edit, run_om_bytes

F = TensorProto.FLOAT


def softmax_om(shape=(4, 6, 32)) -> bytes:
    g = helper.make_graph([helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Softmax", ["e"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", F, list(shape))],
                          [helper.make_tensor_value_info("y", F, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return atc_py.build(m, {"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "must_keep_origin_dtype"}).om


@pytest.fixture(scope="module")
def om() -> bytes:
    return softmax_om()


def asc(md) -> ge.OpDef:
    return next(op for op in md.graph[0].op if op.type == "AscBackend")


def node(gd: ge.GraphDef, name: str) -> ge.OpDef:
    return next(op for op in gd.op if op.name == name)


def hint(md):
    return asc(md).attr["ascgraph"].g


def impl(md):
    return asc(md).attr["ascgraph_impl"].g


def _producer(md, op, i: int):
    """The output descriptor op's input i reads (changed with it: the inputs agree with their producers)."""
    name, k = op.input[i].rsplit(":", 1)
    return next(o for o in md.graph[0].op if o.name == name).output_desc[int(k)]


@pytest.mark.parametrize("mutate,expect", [
    (lambda md: node(hint(md), "exp0").attr["sched.axis"].list.i.append(9), ["'exp0'", "sched.axis"]),
    (lambda md: node(impl(md), "sum0").output_desc[0].attr["axis"].list.i.__setitem__(0, 99), ["'sum0'", "axis"]),
    (lambda md: node(hint(md), "exp0").input_desc.add().CopyFrom(node(hint(md), "max0").output_desc[0]),
     ["'exp0'", "input 0 repeats"]),
    (lambda md: node(impl(md), "data0").output_desc[0].attr["strides"].list.s.__setitem__(0, b"s2"),
     ["'data0'", "contract"]),
    (lambda md: node(impl(md), "output0").input.__setitem__(0, "exp0:0"), ["'output0'", "field y"]),
    (lambda md: node(hint(md), "sub0").output_desc[0].attr["repeats"].list.s.__setitem__(0, b"s0*(s1"),
     ["'sub0'", "repeats"]),
    (lambda md: node(hint(md), "data0").attr["index"].__setattr__("i", 4), ["Data.index"]),
    (lambda md: node(hint(md), "exp0").__setattr__("type", "Conv2D"), ["'exp0'", "type"]),
    (lambda md: hint(md).attr["axis_size"].list.s.__setitem__(0, b"s0*s0*s0*s0"), ["repeats"]),
    (lambda md: asc(md).attr["ascgraph"].__setattr__("s", b"not a graph"), ["must be graphs"]),
    (lambda md: asc(md).output_desc[0].shape.dim.__setitem__(2, 31), ["not what its graph computes"]),
    (lambda md: asc(md).input_desc[0].shape.dim.__setitem__(0, 5), ["input 0 is described as", "'x' (Data)"]),
    (lambda md: [d.shape.dim.__setitem__(0, 5) for d in (asc(md).input_desc[0], _producer(md, asc(md), 0))],
     ["not what its graph computes"]),
    (lambda md: impl(md).attr["axis_type"].list.s.__setitem__(4, b"TILE_IN"), ["TILE_IN"]),
    (lambda md: node(impl(md), "exp0").attr["sched.axis"].list.i.__setitem__(1, 0), ["'exp0'", "sched.axis"]),
])
def test_om_run_rejects_a_malformed_ascgraph_naming_node_and_field(om_run, tmp_path, om, mutate, expect):
    code, _, err = run_om_bytes(om_run, tmp_path, edit(om, mutate))
    assert code == 1 and "E30001" in err and "Traceback" not in err, err
    assert "AscBackend" in err and all(e in err for e in expect), err


def _tiling(om_bytes, change):
    """Rewrite the AscBackend's tiling data (decoded by its layout: s0, s1, s2, tile, tiles per block)."""
    def tasks(mtd: task_pb2.ModelTaskDef):
        kd = next(t.kernel_with_handle for t in mtd.task if t.HasField("kernel_with_handle"))
        addrs, data = parse(kd.context.args_format, kd.args)
        st = TilingStruct(*[(n, "Q") for n in ("s0", "s1", "s2", "z0z1t_size", "z0z1Tb_size")])
        values = st.unpack(data)
        change(values)
        kd.args = kd.args[:addrs["t"]] + st.pack(**values)
    return tasks


@pytest.mark.parametrize("change,expect", [
    (lambda v: v.__setitem__("s2", 64), "tiling data says s2 = 64"),
    (lambda v: v.__setitem__("z0z1t_size", 0), "tiling variables"),
    (lambda v: v.__setitem__("z0z1Tb_size", 1 << 62), "does not cover"),
    (lambda v: v.__setitem__("z0z1t_size", 1 << 40), "tiling variables"),
])
def test_om_run_rejects_tiling_data_the_kernel_could_not_run(om_run, tmp_path, om, change, expect):
    code, _, err = run_om_bytes(om_run, tmp_path, edit(om, tasks=_tiling(om, change)))
    assert code == 1 and "E30001" in err and "launch" in err and expect in err, err


def test_om_run_rejects_a_tile_that_overflows_the_unified_buffer(om_run, tmp_path):
    big = softmax_om((64, 48, 256))
    def whole(v):
        v["z0z1t_size"], v["z0z1Tb_size"] = 64 * 48, 1       # every row in one tile: MBs of UB
    def one_block(md):
        asc(md).attr["tvm_blockdim"].i = 1
    code, _, err = run_om_bytes(om_run, tmp_path, edit(big, one_block, tasks=_tiling(big, whole)))
    assert code == 1 and "E30001" in err and "B of UB" in err, err


def test_om_run_rejects_an_unknown_tiling_key(om_run, tmp_path, om):
    def key(md):
        asc(md).attr["_tiling_key"].i = 7
    code, _, err = run_om_bytes(om_run, tmp_path, edit(om, key))
    assert code == 1 and "E30001" in err and "tiling key 7" in err, err


def test_the_unmodified_file_runs(om_run, tmp_path, om):
    code, out, err = run_om_bytes(om_run, tmp_path, om)
    assert code == 0, err


def test_a_graph_the_compiler_builds_wrong_is_an_error_naming_node_and_field(monkeypatch):
    """A lowering rule that produced a graph breaking a rule: E19999 (an internal fault) naming the AscGraph's
    node and field, no traceback, no file."""
    from atc_py.autofuse import build as build_mod
    real = build_mod.HintBuilder.bcast

    def wrong(self, r, mask):          # a Broadcast that keeps its input's repeats
        out = real(self, r, mask)
        if out.node.type == "Broadcast":
            out.node.y.repeats = list(out.node.input_attr(0).repeats)
        return out
    monkeypatch.setattr(build_mod.HintBuilder, "bcast", wrong)
    g = helper.make_graph([helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Softmax", ["e"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", F, [2, 8])],
                          [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(AtcError) as e:
        atc_py.build(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
                     {"ge.socVersion": "Ascend910B1"})
    assert e.value.code == "E19999" and "'broadcast0' (Broadcast) field repeats" in str(e.value)


def test_a_validated_model_computes_what_its_graph_says(om_run, tmp_path, om):
    """The checked graphs are what runs: the fused result equals the unfused build's."""
    p = tmp_path / "a.om"
    p.write_bytes(om)
    from om_run.load.loader import load_model
    from om_run.sim.host import Simulation
    x = np.random.default_rng(0).standard_normal((4, 6, 32)).astype(np.float32)
    (y,), _ = Simulation(load_model(str(p))).run([x])
    e = np.exp(x)
    e = np.exp(e - e.max(-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-6)
