"""Tiling sink: marking, the triple gate, partition, running params, task sequences, SuperKernel,
custom ops, and numerics of both variants against numpy references (tests/helpers/decoder_reference.py)."""
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import atc_py
from atc_py.common.errors import AtcError
from atc_py.engines.sink import PARAM_DEF_SIZE
from atc_py.om import partitions as pt
from atc_py.om import read_om
from atc_py.om import task_types as tt
from atc_py.proto import ge_ir_pb2 as ge
from atc_py.proto import task_pb2
from om_run.load.loader import load_model
from om_run.sim.capabilities import Device
from om_run.sim.execute import execute
from tests.helpers import MODELS, PLUGIN
from tests.helpers import decoder_reference as ref

DECODER = MODELS / "decoder_step.onnx"


def build(model, soc="Ascend910B1", sink="1", **opts):
    return atc_py.build(str(model) if not isinstance(model, onnx.ModelProto) else model,
                        {"ge.socVersion": soc, "ge.tiling_schedule_optimize": sink, "op_plugin": str(PLUGIN),
                         "ge.exec.precision_mode": "must_keep_origin_dtype", **opts})


def tasks_of(om_bytes, model=0):
    om = read_om(om_bytes)
    return task_pb2.ModelTaskDef.FromString(om.models[model].get(pt.TASK_INFO)), om


def ops_of(om_bytes, model=0):
    om = read_om(om_bytes)
    md = ge.ModelDef.FromString(om.models[model].get(pt.MODEL_DEF))
    return {op.id: op for op in md.graph[0].op}


def tiny(nodes, inputs, outputs, inits=(), domains=("ascend",)):
    g = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)] +
                             [helper.make_opsetid(d, 1) for d in domains], ir_version=8)


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def trilu_model(k_const: bool):
    inits = [numpy_helper.from_array(np.array(1, np.int64), "k")] if k_const else []
    ins = [vi("x", [2, 4, 4])] + ([] if k_const else [vi("k", [], TensorProto.INT64)])
    return tiny([helper.make_node("Trilu", ["x", "k"], ["y"], name="tri")], ins, [vi("y", [2, 4, 4])], inits, ())


def cumsum_model():
    return tiny([helper.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum_0")],
                [vi("x", [4, 8]), vi("axis", [], TensorProto.INT64)], [vi("y", [4, 8])], (), ())


# -- marking and the gate -------------------------------------------------------------------------------
@pytest.mark.parametrize("value,sunk", [("", False), ("0", False), ("1", True)])
def test_option_gate(value, sunk):
    r = build(trilu_model(False), sink=value)
    d = r.summary["sink_decisions"][0]
    assert d["sunk"] is sunk
    assert ("not supported. If support is needed" in d["reason"]) is (not sunk)


def test_constant_dependent_input_is_not_marked_and_tiles_at_compile_time():
    r = build(trilu_model(True))
    assert r.summary["sink_decisions"] == [] and r.summary["models"] == 1
    node = r.graph.node("tri")
    assert "_dynamic_tiling_depend_op" not in node.attrs


def test_marking_attributes():
    r = build(trilu_model(False))
    assert r.graph.node("tri").attrs["_dynamic_tiling_depend_op"] is True
    assert r.graph.node("tri").attrs["_tiling_sink_op"] is True
    r = build(trilu_model(False), sink="0")
    assert r.graph.node("tri").attrs["_force_unknown_shape"] is True


@pytest.mark.parametrize("soc,sunk", [("Ascend910B1", True), ("Ascend910_9391", True), ("Ascend310P3", True),
                                      ("Ascend910A", False), ("Ascend310B1", False)])
def test_online_build_asks_the_device(soc, sunk):
    r = atc_py.build(trilu_model(False), {"ge.socVersion": soc, "ge.tiling_schedule_optimize": "1"},
                     online=True, device=Device(soc))
    d = r.summary["sink_decisions"][0]
    assert d["sunk"] is sunk
    if not sunk:
        assert "tiling sink feature not support" in d["reason"]


def test_offline_build_skips_the_device_check():
    r = build(trilu_model(False), soc="Ascend910A")
    assert r.summary["sink_decisions"][0]["sunk"] is True
    assert "offline build skips the device check" in r.summary["sink_decisions"][0]["reason"]


def test_host_only_op_is_forced_dynamic_with_reason_in_summary():
    r = build(cumsum_model())
    assert r.summary["tiling_sink"] == \
        "tiling sink: 0 ops sunk, 1 forced dynamic: cumsum_0 (Cumsum) has no TILING_ON_AICPU placement"
    assert r.summary["models"] > 1


def test_aicpu_only_placement_is_a_build_error(tmp_path):
    plugin = tmp_path / "aicpu_only.py"
    plugin.write_text(
        "from atc_py.ops import register\n"
        "from atc_py.ops.core.base import ON_AICPU\n"
        "from atc_py.ops.scan_mask import Trilu\n"
        "from atc_py.frontend.onnx.adapter import onnx_op, OnnxOp\n"
        "@register\nclass AicpuOnlyTrilu(Trilu):\n    op_type = 'AicpuOnlyTrilu'\n"
        "    tiling_placements = frozenset({ON_AICPU})\n"
        "@onnx_op('AicpuOnlyTrilu', domain='custom')\nclass A(OnnxOp):\n"
        "    @classmethod\n    def _impl_v1(cls, ctx):\n        return ctx.emit('AicpuOnlyTrilu', [ctx.input(0), ctx.input(1)])\n")
    m = tiny([helper.make_node("AicpuOnlyTrilu", ["x", "k"], ["y"], name="t", domain="custom")],
             [vi("x", [2, 4, 4]), vi("k", [], TensorProto.INT64)], [vi("y", [2, 4, 4])], (), ("custom",))
    with pytest.raises(AtcError, match="does not support TILING_ON_HOST"):
        atc_py.build(m, {"ge.socVersion": "Ascend910B1", "op_plugin": str(plugin)})


def test_never_timeout_on_a_sink_op_is_rejected():
    m = trilu_model(False)
    m.graph.node[0].attribute.append(helper.make_attribute("_op_exec_never_timeout", 1))
    with pytest.raises(AtcError, match="never-timeout"):
        build(m)
    assert build(m, sink="0").summary["models"] > 1  # not sunk: allowed


# -- partition ------------------------------------------------------------------------------------------
def chain_model(ops_before: int, ops_after: int):
    """relu x ops_before -> Trilu(k from input) -> relu x ops_after."""
    nodes, cur = [], "x"
    for i in range(ops_before):
        nodes.append(helper.make_node("Relu", [cur], [f"a{i}"], name=f"pre{i}"))
        cur = f"a{i}"
    nodes.append(helper.make_node("Trilu", [cur, "k"], ["t"], name="tri"))
    cur = "t"
    for i in range(ops_after):
        nodes.append(helper.make_node("Sigmoid", [cur], [f"b{i}"], name=f"post{i}"))
        cur = f"b{i}"
    nodes.append(helper.make_node("Identity", [cur], ["y"], name="out"))
    return tiny(nodes, [vi("x", [2, 4, 4]), vi("k", [], TensorProto.INT64)], [vi("y", [2, 4, 4])], (), ())


def kinds(result):
    om = read_om(result.om)
    root = ge.ModelDef.FromString(om.models[0].get(pt.MODEL_DEF))
    return [("unknow" if op.attr["_is_unknown_shape"].b else "know", op.attr["f"].s.decode().rsplit("_", 1)[0][-1])
            for op in root.graph[0].op if op.type == "PartitionedCall"]


def test_partition_keeps_big_known_clusters_and_makes_small_ones_unknown():
    r = build(chain_model(5, 1), sink="0")
    om = read_om(r.om)
    assert om.header.is_unknow_model == 1 and om.header.model_num == 3
    assert [k for k, _ in kinds(r)] == ["know", "unknow"]  # 5 relus known; trilu + 1 sigmoid unknown
    assert r.summary["known_subgraphs"] == 1 and r.summary["unknown_subgraphs"] == 1


def test_partition_lower_limit():
    assert [k for k, _ in kinds(build(chain_model(3, 0), sink="0"))] == ["unknow"]  # 3 < 4: merged in
    r = build(chain_model(3, 0), sink="0", **{"ge.exec.static_model_ops_lower_limit": "2"})
    assert [k for k, _ in kinds(r)] == ["know", "unknow"]
    r = build(chain_model(0, 0), sink="1", **{"ge.exec.static_model_ops_lower_limit": "-1"})
    assert [k for k, _ in kinds(r)] == ["unknow"]  # -1: everything dynamic, even with sink


def _ir_chain(direct_edge: bool):
    """u0 (unknown) -> k0..k4 (known) -> u1 (unknown); optionally also u0 -> u1 directly."""
    from atc_py.ir.graph import Graph, TensorDesc
    g = Graph("p")
    d = TensorDesc((4,), "float32")
    x = g.add_node("x", "Data", out_descs=[d], attrs={"index": 0}).outputs[0]
    u0 = g.add_node("u0", "Relu", [x], [d], {"_force_unknown_shape": True})
    cur = u0.outputs[0]
    for i in range(5):
        cur = g.add_node(f"k{i}", "Relu", [cur], [d]).outputs[0]
    u1 = g.add_node("u1", "Add", [cur, u0.outputs[0] if direct_edge else x], [d], {"_force_unknown_shape": True})
    g.add_node("NetOutput", "NetOutput", [u1.outputs[0]], [])
    return g


@pytest.mark.parametrize("direct_edge,expected", [(True, ["unknow"]), (False, ["unknow", "know", "unknow"])])
def test_sandwiched_known_cluster(direct_edge, expected):
    """An unknown cluster absorbs every cluster on a path from its unknown inputs (GE MergeAllPathFrom);
    a known chain that is not between an unknown and its unknown consumer stays known."""
    from atc_py.passes.partition import partition
    res = partition(_ir_chain(direct_edge))
    assert ["know" if s.known else "unknow" for s in res.subgraphs] == expected


# -- running params and task sequences ------------------------------------------------------------------
def sink_sequences(mtd):
    tasks = list(mtd.task)
    seqs = []
    for i, t in enumerate(tasks):
        if t.type == tt.PREPROCESS_KERNEL:
            j = i + 1
            wait = tasks[j]
            nops = 0
            while tasks[j + 1 + nops].type == tt.NOP:
                nops += 1
            kernel, update, record = tasks[j + 1 + nops], tasks[j + 2 + nops], tasks[j + 3 + nops]
            seqs.append((t, wait, nops, kernel, update, record))
    return seqs


@pytest.mark.parametrize("soc,nops", [("Ascend910B1", 8), ("Ascend910B4", 8), ("Ascend310P3", 10),
                                      ("Ascend910A", 0)])
def test_decoder_sink_sequence_per_soc(soc, nops):
    r = build(DECODER, soc=soc)
    mtd, om = tasks_of(r.om)
    assert om.header.model_num == 1 and om.header.is_unknow_model == 0
    ops = ops_of(r.om)
    seqs = sink_sequences(mtd)
    assert len(seqs) == 4
    attached_streams = {s[0].stream_id for s in seqs}
    assert len(attached_streams) == 1  # one attached "tiling" stream, after the compute streams
    for tiling, wait, n, kernel, update, record in seqs:
        op = ops[tiling.kernel.context.op_index]
        attached, main = tiling.stream_id, wait.stream_id
        assert main == op.stream_id and attached == max(t.stream_id for t in mtd.task) != main
        assert tiling.kernel.kernel_name == "RunAicpuRpcSrvLaunch"
        assert tiling.kernel.context.kernel_type == tt.AI_CPU
        assert tiling.kernel.context.args_format == "{tiling_context}{*op_type}{}"
        assert len(tiling.kernel.args) == PARAM_DEF_SIZE == 8264
        so = tiling.kernel.args[18:18 + 4096].rstrip(b"\0").decode()
        assert so == tiling.kernel.so_name and so.endswith("libopmaster.so")
        assert ("Ascend310P-v" in so) is soc.startswith("Ascend310P")
        assert tiling.kernel.args[16] == 0  # is_custom
        assert wait.type == tt.EVENT_WAIT and n == nops
        mix_on_split = op.type == "IncreFlashAttention" and soc.startswith("Ascend910B")
        assert kernel.type == (tt.FFTS_PLUS_TASK if mix_on_split else tt.ALL_KERNEL)
        assert kernel.stream_id == main
        if kernel.type == tt.ALL_KERNEL:
            assert kernel.kernel_with_handle.block_dim == 0xFFFFFFFF
            assert kernel.kernel_with_handle.context.args_format.endswith("{tiling_context.tiling_data}")
        else:
            assert kernel.ffts_plus_task.ffts_plus_sqe.sqe_header.block_dim == 0xFFFFFFFF
            assert kernel.ffts_plus_task.ffts_plus_ctx[0].mix_aic_aiv_ctx.args_format.endswith(
                "{tiling_context.tiling_data}")
        assert update.type == tt.UPDATE and update.stream_id == attached
        assert update.update_pc_task.args_format == "{tiling_context.tiling_key}{tiling_context.block_dim}"
        assert update.update_pc_task.op_index == op.id
        assert record.type == tt.EVENT_RECORD and record.stream_id == attached and record.event_id == wait.event_id
        assert op.attr["_tiling_sink_op"].b and op.attr["_attached_stream_info"].list.s == [b"tiling"]
        depend = list(op.attr["_attached_stream_depend_value_input_indices"].list.i)
        assert depend == ([3] if op.type == "IncreFlashAttention" else [2])


def test_dependent_value_made_on_device_gets_a_cross_stream_event():
    mtd, _ = tasks_of(build(DECODER).om)
    tasks = list(mtd.task)
    first = next(i for i, t in enumerate(tasks) if t.type == tt.PREPROCESS_KERNEL)
    rec, wait, tiling = tasks[first - 2], tasks[first - 1], tasks[first]
    assert (rec.type, wait.type) == (tt.EVENT_RECORD, tt.EVENT_WAIT)
    assert wait.stream_id == tiling.stream_id != rec.stream_id and rec.event_id == wait.event_id


def test_debug_sink_nops_overrides_prefetch_num():
    seqs = sink_sequences(tasks_of(build(DECODER, debug_sink_nops="2").om)[0])
    assert {s[2] for s in seqs} == {2}


def test_without_sink_the_decoder_is_a_multi_model_om_with_dynamic_parts():
    r = build(DECODER, sink="0")
    om = read_om(r.om)
    assert om.header.is_unknow_model == 1 and om.header.model_num == 1 + len(kinds(r)) > 2
    assert any(k == "unknow" for k, _ in kinds(r))
    all_tasks = [t for m in om.models[1:] for t in task_pb2.ModelTaskDef.FromString(m.get(pt.TASK_INFO)).task]
    assert not any(t.type in (tt.PREPROCESS_KERNEL, tt.UPDATE, tt.NOP) for t in all_tasks)


def test_workspace_comes_from_one_compile_time_tiling_run():
    ops = ops_of(build(DECODER).om)
    ifa = next(op for op in ops.values() if op.type == "IncreFlashAttention")
    assert ifa.attr["op_para_size"].i == 16384
    # worst case (every sequence full, 64 <= 256) needs no split-KV workspace
    assert list(ifa.workspace_bytes) == []


def test_plain_kernel_sink_task_is_an_error(tmp_path):
    plugin = tmp_path / "single_key.py"
    plugin.write_text(
        "from atc_py.ops import register\nfrom atc_py.ops.scan_mask import Trilu\n"
        "from atc_py.frontend.onnx.adapter import onnx_op, OnnxOp\n"
        "@register\nclass OneKeyTrilu(Trilu):\n    op_type = 'OneKeyTrilu'\n    tiling_keys = (0,)\n"
        "@onnx_op('OneKeyTrilu', domain='custom')\nclass A(OnnxOp):\n"
        "    @classmethod\n    def _impl_v1(cls, ctx):\n        return ctx.emit('OneKeyTrilu', [ctx.input(0), ctx.input(1)])\n")
    m = tiny([helper.make_node("OneKeyTrilu", ["x", "k"], ["y"], name="t", domain="custom")],
             [vi("x", [2, 4, 4]), vi("k", [], TensorProto.INT64)], [vi("y", [2, 4, 4])], (), ("custom",))
    with pytest.raises(AtcError, match="failed to find a valid task"):
        atc_py.build(m, {"ge.socVersion": "Ascend910B1", "op_plugin": str(plugin), "ge.tiling_schedule_optimize": "1"})


# -- custom operators -----------------------------------------------------------------------------------
def test_custom_sink_op_differences():
    r = build(MODELS / "custom_op.onnx")
    mtd, om = tasks_of(r.om)
    assert om.models[0].get(pt.CUST_AICPU_KERNELS), "custom device-tiling library in CUST_AICPU_KERNELS"
    (tiling, wait, nops, kernel, update, record), = sink_sequences(mtd)
    assert tiling.kernel.context.kernel_type == tt.CUST_AI_CPU
    assert tiling.kernel.context.args_format == "{tiling_context}{*op_type}{}{ws0*}"
    assert tiling.kernel.args[16] == 1 and tiling.kernel.so_name.endswith("libcust_opmaster.so")
    op = ops_of(r.om)[tiling.kernel.context.op_index]
    assert list(op.workspace_bytes) == [20480]
    builtin = sink_sequences(tasks_of(build(DECODER).om)[0])[0][0]
    assert builtin.kernel.context.kernel_type == tt.AI_CPU


def test_custom_op_without_plugin_in_om_run_is_a_clean_error(tmp_path):
    from atc_py.ops.core import registry
    p = tmp_path / "c.om"
    p.write_bytes(build(MODELS / "custom_op.onnx").om)
    saved = registry._REGISTRY.pop("RowScale")
    try:
        with pytest.raises(AtcError, match="'RowScale' are not registered"):
            load_model(str(p))
    finally:
        registry._REGISTRY["RowScale"] = saved


# -- SuperKernel ----------------------------------------------------------------------------------------
def test_superkernel_fuses_scope_and_uses_the_sk_sink_variant():
    mtd, _ = tasks_of(build(MODELS / "superkernel.onnx").om)
    types = [t.type for t in mtd.task]
    assert types.count(tt.SUPER_KERNEL) == 1
    assert tt.NOP not in types and tt.UPDATE not in types
    sk = next(t for t in mtd.task if t.type == tt.SUPER_KERNEL)
    members = json.loads(sk.kernel.kernel_ext_info)["members"]
    assert len(members) == 4 == len(sk.kernel.context.origin_op_index)
    tiling = next(t for t in mtd.task if t.type == tt.PREPROCESS_KERNEL)
    event = tiling.kernel.context.args_format.split("event_addr")[1].rstrip("*}")
    assert tiling.kernel.context.args_format == f"{{tiling_context}}{{*op_type}}{{event_addr{event}*}}"
    sink_member = [m for m in members if "tiling_context" in m["args_format"]]
    assert len(sink_member) == 1 and sink_member[0]["args_format"].endswith(
        f"{{tiling_context.tiling_data}}{{tiling_context.tiling_key}}{{tiling_context.block_dim}}{{event_addr{event}*}}")
    assert types.index(tt.PREPROCESS_KERNEL) < types.index(tt.SUPER_KERNEL)


def test_superkernel_reuse_binary_without_sink_fails_with_ge_text(tmp_path):
    """o_proj is a member of the scope that does not sink its tiling: reuse_binary must fail with GE's text."""
    cfg = tmp_path / "attrs.json"
    cfg.write_text(json.dumps({"o_proj": {"super_kernel_reuse_binary": True}}))
    with pytest.raises(AtcError, match=r"SuperKernel node\[o_proj, MatMulV2\] that has reused binary is not "
                                       r"going into the tiling sink procedure, SK procedure failed\."):
        build(MODELS / "superkernel.onnx", op_attr_config=str(cfg))
    cfg.write_text(json.dumps({"ifa": {"super_kernel_reuse_binary": True}}))
    assert build(MODELS / "superkernel.onnx", op_attr_config=str(cfg)).summary["tasks"] > 0  # sink op: fine


def test_op_attr_config_sets_the_scope(tmp_path):
    cfg = tmp_path / "attrs.json"
    cfg.write_text(json.dumps({"lens_plus_one": {"_super_kernel_scope": "sk_len"}}))
    mtd, _ = tasks_of(build(MODELS / "superkernel.onnx", op_attr_config=str(cfg)).om)
    assert [t.type for t in mtd.task].count(tt.SUPER_KERNEL) == 2
    cfg.write_text(json.dumps({"nope": {"a": 1}}))
    with pytest.raises(AtcError, match="E10016"):
        build(MODELS / "superkernel.onnx", op_attr_config=str(cfg))


# -- numerics of both variants --------------------------------------------------------------------------
REFS = {"decoder_step": ref.decoder_step, "superkernel": ref.superkernel, "custom_op": ref.custom_op}


@pytest.mark.parametrize("name", sorted(REFS))
@pytest.mark.parametrize("soc", ["Ascend910B1", "Ascend310P3"])
@pytest.mark.parametrize("sink", ["0", "1"])
def test_numerics_match_numpy_reference(tmp_path, name, soc, sink):
    p = tmp_path / "m.om"
    p.write_bytes(build(MODELS / f"{name}.onnx", soc=soc, sink=sink).om)
    model = load_model(str(p))
    with np.load(MODELS / f"{name}.inputs.npz") as z:
        feeds = {k: z[k] for k in z.files}
    (y,) = execute(model, [feeds[io.name] for io in model.inputs])
    np.testing.assert_allclose(y, REFS[name](MODELS / f"{name}.onnx", feeds), rtol=1e-4, atol=1e-5)


def test_out_of_range_length_is_a_runtime_error_naming_op_and_value(tmp_path):
    p = tmp_path / "m.om"
    p.write_bytes(build(DECODER).om)
    model = load_model(str(p))
    with np.load(MODELS / "decoder_step.inputs.npz") as z:
        feeds = {k: z[k] for k in z.files}
    feeds["seq_lens"] = feeds["seq_lens"].copy()
    feeds["seq_lens"][2] = 64  # +1 = 65 > S
    with pytest.raises(AtcError, match=r"l0_ifa: IncreFlashAttention.*actual_seq_lengths\[2\] = 65 is outside \[1, 64\]"):
        execute(model, [feeds[io.name] for io in model.inputs])


def test_update_model_on_soc_without_task_update_fails_to_load(tmp_path):
    p = tmp_path / "m.om"
    p.write_bytes(build(DECODER, soc="Ascend910A").om)
    with pytest.raises(AtcError, match="no task-update capability"):
        load_model(str(p))
