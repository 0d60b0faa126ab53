"""Editing a compiled .om (sealed again, as any writer can), listing its ops, running it in om-run."""
from __future__ import annotations

from atc_py.om import partitions as pt
from atc_py.om.container import read_om
from atc_py.proto import ge_ir_pb2, task_pb2
from atc_py.proto import ge_ir_pb2 as ge
from tools.fuzz.om_mutants import OmDoc


def edit(data: bytes, model_def=None, tasks=None, header=None, seal: bool = True) -> bytes:
    """A copy of the .om with MODEL_DEF / TASK_INFO / header changed by the given functions."""
    doc = OmDoc(data)
    if model_def is not None:
        md = ge.ModelDef.FromString(doc.get(0, pt.MODEL_DEF))
        model_def(md)
        doc.put(0, pt.MODEL_DEF, md.SerializeToString())
    if tasks is not None:
        mtd = task_pb2.ModelTaskDef.FromString(doc.get(0, pt.TASK_INFO))
        tasks(mtd)
        doc.put(0, pt.TASK_INFO, mtd.SerializeToString())
    if header is not None:
        header(doc.header)
    return doc.pack(seal)


def run_om_bytes(om_run, tmp_path, data: bytes, *args):
    p = tmp_path / "m.om"
    p.write_bytes(data)
    return om_run("--model", str(p), *args)


def op_named(md, op_type: str):
    return next(op for op in md.graph[0].op if op.type == op_type)


def first_kernel(mtd):
    return next(t for t in mtd.task if t.HasField("kernel"))


def om_ops(om: bytes):
    md = ge_ir_pb2.ModelDef.FromString(read_om(om).models[0].get(pt.MODEL_DEF))
    return [op for g in md.graph for op in g.op]
