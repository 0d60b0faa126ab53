"""The compile pipeline as a Python API: atc_py.build(model, options) -> BuildResult (the .om bytes + summary).

Options use GE's names (ge.socVersion, ge.frameworkType, input_shape, ge.outputNodeName,
ge.tiling_schedule_optimize, ge.buildGraphMode, ...).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable

import onnx

from . import __version__
from .engines.aicore import generate_tasks
from .engines.tiling import tile_graph
from .errors import AtcError
from .frontend.onnx import convert_onnx, load_onnx
from .ir.dtypes import dtype_by_name
from .ir.graph import Graph
from .om import OmModel, write_om
from .om import partitions as pt
from .om.inout_info import IoDesc, build_inout
from .om.kernel_store import build_store
from .om.modeldef import model_def
from .ops import get_op
from .options import check_tiling_schedule_optimize_session, parse_input_shape, parse_out_nodes
from .passes.engine import assign_engines
from .passes.fold import fold_constants
from .passes.infer import infer_graph
from .passes.memory import FEATURE_MAP_BASE, WEIGHT_BASE, plan_memory
from .passes.out_nodes import apply_out_nodes
from .passes.prune import remove_dead_nodes, remove_identities
from .platform import load_soc
from .proto import task_pb2

FRAMEWORK_ONNX = "5"


@dataclass
class BuildResult:
    om: bytes
    summary: dict = field(default_factory=dict)
    graph: Graph | None = None


class _Stages:
    """Stage timing for --log=info."""

    def __init__(self, log: Callable[[str, str], None]):
        self.log = log
        self.times: dict[str, float] = {}

    def run(self, name: str, fn, *args):
        t0 = time.perf_counter()
        res = fn(*args)
        self.times[name] = time.perf_counter() - t0
        self.log("info", f"stage {name}: {self.times[name] * 1e3:.1f} ms")
        return res


def _no_log(level: str, msg: str) -> None:
    pass


def build(model: str | onnx.ModelProto, options: dict[str, str], online: bool = False, device=None,
          log: Callable[[str, str], None] = _no_log) -> BuildResult:
    check_tiling_schedule_optimize_session(options.get("ge.tiling_schedule_optimize", ""))
    framework = options.get("ge.frameworkType", FRAMEWORK_ONNX)
    if framework != FRAMEWORK_ONNX:
        raise AtcError("E10001", value=framework, parameter="--framework",
                       reason="This version of atc-py supports 5(Onnx) only.")
    soc = load_soc(options.get("ge.socVersion", ""))
    st = _Stages(log)
    proto = st.run("load", load_onnx, model) if isinstance(model, str) else model
    shapes = parse_input_shape(options.get("input_shape", ""))
    graph, info = st.run("parse", convert_onnx, proto, shapes)
    apply_out_nodes(graph, parse_out_nodes(options.get("ge.outputNodeName", "")), info["node_outputs"],
                    info["values"])
    stats: dict[str, int] = {}
    stats["identities_removed"] = st.run("identity", remove_identities, graph)
    st.run("infer", infer_graph, graph)
    stats["constants_folded"] = st.run("fold", fold_constants, graph, soc)
    stats["dead_removed"] = st.run("dce", remove_dead_nodes, graph)
    graph.topo_sort()
    engines = st.run("engines", assign_engines, graph)
    tilings = st.run("tiling", tile_graph, graph, soc)
    plan = st.run("memory", plan_memory, graph, {n: t.workspace for n, t in tilings.items()})
    ids = {n.name: k for k, n in enumerate(graph.nodes)}
    tasks, kernels = st.run("taskgen", generate_tasks, graph, ids, tilings, plan)

    name = options.get("om_name", graph.name)
    tbe = build_store([(k.name, _kernel_binary(k)) for k in kernels.values() if k.engine == "AICORE"])
    cust = b""
    mtd = task_pb2.ModelTaskDef(version="2.0", memory_size=plan.memory_size, weight_size=plan.weight_size,
                                stream_num=1, event_num=0, base_addr=FEATURE_MAP_BASE, weight_addr=WEIGHT_BASE)
    mtd.task.extend(tasks)
    task_bytes = mtd.SerializeToString(deterministic=True)
    tiling_info = {n: {"_tiling_key": t.tiling_key, "tvm_blockdim": t.block_dim, "_kernelname": _kname(n, tasks, ids)}
                   for n, t in tilings.items()}
    for node in graph.nodes:
        if node.meta.get("engine") not in (None, "NONE"):
            tiling_info.setdefault(node.name, {})["_ge_attr_op_kernel_lib_name"] = \
                "AIcoreEngine" if node.meta["engine"] == "AICORE" else "aicpu_ascend_kernel"
            tiling_info[node.name]["_cube_vector_core_type"] = node.meta["core_type"]
    model_attrs = {
        "stream_num": 1, "event_num": 0, "label_num": 0, "batch_num": 0,
        "soc_version": soc.soc_version, "core_type": "AiCore", "framework_type": int(framework),
        "atc_version": f"atc-py {__version__}", "atc_cmdline": options.get("atc_cmdline", ""),
        "om_info_list": [plan.weight_size, len(tbe), len(cust), len(task_bytes), 0],
    }
    md = model_def(graph, ids, plan, model_attrs, tiling_info, name)
    md_bytes = md.SerializeToString(deterministic=True)
    inout = build_inout(_io_descs(graph, plan, inputs=True), _io_descs(graph, plan, inputs=False))
    parts = {pt.MODEL_INOUT_INFO: inout, pt.MODEL_DEF: md_bytes, pt.WEIGHTS_DATA: plan.weights,
             pt.TBE_KERNELS: tbe, pt.CUST_AICPU_KERNELS: cust, pt.TASK_INFO: task_bytes}
    om_model = OmModel([(t, parts[t]) for t in pt.STATIC_ORDER if parts.get(t)])
    om = write_om([om_model], name)

    summary = {
        "soc_version": soc.soc_version, "ops": sum(1 for n in graph.nodes if get_op(n.op_type).no_task is False),
        "ops_by_engine": engines, "tasks": len(tasks), "memory_size": plan.memory_size,
        "weight_size": plan.weight_size, "stream_num": 1, "event_num": 0, **stats,
        "stage_ms": {k: round(v * 1e3, 2) for k, v in st.times.items()},
    }
    return BuildResult(om, summary, graph)


def _kname(node_name: str, tasks, ids) -> str:
    for t in tasks:
        k = t.kernel if t.HasField("kernel") else t.kernel_with_handle
        if k.context.op_index == ids[node_name]:
            return t.kernel.kernel_name if t.HasField("kernel") else t.kernel_with_handle.original_kernel_key
    return ""


def _kernel_binary(k) -> bytes:
    """Our stand-in for a kernel binary: its descriptor (op type, core type, tiling-key entries)."""
    return json.dumps({"kernel_name": k.name, "op_type": k.op_type, "core_type": k.core_type,
                       "tiling_keys": list(k.tiling_keys)}, sort_keys=True).encode()


def _io_descs(graph: Graph, plan, inputs: bool) -> list[IoDesc]:
    if inputs:
        vals = [(n.outputs[0].name, n.outputs[0]) for n in graph.data_nodes]
    else:
        net = graph.net_output
        vals = list(zip(net.attrs.get("output_names", [v.name for v in net.inputs]), net.inputs))
    return [IoDesc(name, v.desc.shape, dtype_by_name(v.desc.dtype).cpp, v.desc.format, v.desc.nbytes)
            for name, v in vals]
