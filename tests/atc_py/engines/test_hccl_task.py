"""The HCCL task in the .om as GE writes it (engines/hccl.py): one TaskDef of type 6 (RT_MODEL_TASK_HCCL) per
collective with kernel_hccl {op_index: its op, hccl_type: that op's type}, the op's tensors at its own input/output
offsets, its kernel library ops_kernel_info_hccl and its group recorded on the op, no kernel binary; and how
--mode=1 (JSON) and --mode=6 (model info) show it."""
from __future__ import annotations

import json

import pytest
from onnx import TensorProto

from atc_py.engines.static_model import TASK_BUILDERS
from atc_py.om import partitions as pt
from atc_py.om import task_types as tt
from atc_py.om.attrs import from_attr
from atc_py.om.container import read_om
from atc_py.proto import task_pb2
from tests.helpers import compile_om
from tests.helpers.hccl_models import hcom_model
from tests.helpers.om_files import om_ops

CASES = [("HcomAllReduce", {"reduction": "sum"}), ("HcomAllGather", {"rank_size": 2}),
         ("HcomReduceScatter", {"rank_size": 2, "reduction": "min"}), ("HcomBroadcast", {"root_rank": 1}),
         ("HcomAllToAll", {"rank_size": 2}), ("HcomSend", {"sr_tag": 7, "dest_rank": 1}),
         ("HcomReceive", {"sr_tag": 7, "src_rank": 0})]


def test_the_task_builders_table_has_the_hccl_row():
    from atc_py.engines.hccl import hccl_tasks
    assert TASK_BUILDERS["hccl"] is hccl_tasks


@pytest.mark.parametrize("op_type,attrs", CASES, ids=[c[0] for c in CASES])
def test_each_collective_compiles_to_one_hccl_task(op_type, attrs):
    om = compile_om(hcom_model(op_type, (4, 8), group="tp_group", rank_ids=[3, 5], **attrs))
    mtd = task_pb2.ModelTaskDef.FromString(read_om(om).models[0].get(pt.TASK_INFO))
    hccl = [t for t in mtd.task if t.type == tt.HCCL]
    assert len(hccl) == 1 and tt.HCCL == 6
    task = hccl[0]
    assert task.HasField("kernel_hccl") and not task.HasField("kernel") and not task.HasField("kernel_with_handle")
    ops = {op.id: op for op in om_ops(om)}
    op = ops[task.kernel_hccl.op_index]
    assert op.type == op_type == task.kernel_hccl.hccl_type
    assert task.stream_id == op.stream_id
    assert task.kernel_hccl.aiv_block_dim == 0                 # GE leaves it unset offline
    assert from_attr(op.attr["_ge_attr_op_kernel_lib_name"]) == "ops_kernel_info_hccl"
    assert from_attr(op.attr["_hccl_group_id_list"]) == ["tp_group"]
    assert from_attr(op.attr["rank_ids"]) == [3, 5]
    assert len(op.input_i) == len(op.input_desc) and len(op.output_i) == len(op.output_desc)
    assert "_kernelname" not in op.attr                          # no AI Core binary
    assert op_type.lower() not in (read_om(om).models[0].get(pt.TBE_KERNELS) or b"").decode("latin-1")


def test_mode_1_json_shows_kernel_hccl(atc, tmp_path):
    (tmp_path / "m.om").write_bytes(compile_om(hcom_model("HcomAllGather", (2, 3), rank_size=1)))
    code, _, _ = atc("--mode=1", f"--om={tmp_path / 'm.om'}", f"--json={tmp_path / 'm.json'}")
    assert code == 0
    doc = json.loads((tmp_path / "m.json").read_text())
    ops = {op["name"]: op for op in doc["graph"][0]["op"]}
    hccl = [t for t in doc["task_info"]["task"] if "kernel_hccl" in t]
    assert [t["type"] for t in hccl] == [6]
    k = hccl[0]["kernel_hccl"]
    assert k["hccl_type"] == "HcomAllGather"
    assert next(op for op in ops.values() if op["type"] == "HcomAllGather").get("id", 0) == k.get("op_index", 0)


def test_mode_6_shows_the_hccl_tasks(atc, tmp_path):
    om = compile_om(hcom_model("HcomReduceScatter", (4, 2), TensorProto.INT32, name="rs", reduction="max",
                               rank_size=2, group="dp"))
    (tmp_path / "m.om").write_bytes(om)
    code, out, _ = atc("--mode=6", f"--om={tmp_path / 'm.om'}")
    assert code == 0
    op = next(o for o in om_ops(om) if o.type == "HcomReduceScatter")
    assert "HCCL[1]" in out and "ops_kernel_info_hccl[1]" in out
    assert "  hccl     : 1 task(s)" in out
    assert (f"stream {op.stream_id}: HcomReduceScatter op_index {op.id} (rs; group dp, rank_size 2, reduction max), "
            "aiv_block_dim 0") in out
