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


def simulate_om(om: bytes, inputs: list, tmp_path, name: str = "m"):
    """The .om bytes written to tmp_path/<name>.om, loaded and run once in process: (outputs, run stats)."""
    from om_run.load.loader import load_model
    from om_run.sim.host import Simulation
    path = tmp_path / f"{name}.om"
    path.write_bytes(om)
    return Simulation(load_model(str(path))).run(inputs)


def simulate_one_input(om: bytes, x, tmp_path, name: str = "m"):
    """simulate_om for a model of one input and one output of interest: (its first output, run stats)."""
    outs, stats = simulate_om(om, [x], tmp_path, name)
    return outs[0], stats
