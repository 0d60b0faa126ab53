"""Compile one static (known-shape) graph: tiling, running params, memory, streams/events, tasks → partitions."""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

from ..common.errors import AtcError
from ..ir.graph import Graph, all_graphs, all_nodes
from ..om import task_types as tt
from ..om.kernel_store import build_store
from ..ops import AICORE, get_op
from ..ops.core.base import OpError, TilingResult
from ..ops.core.execute import tiling_context
from ..ops.core.infer import invalid
from ..passes.control_memory import plan_model_memory
from ..passes.engine import assign_engines
from ..passes.memory import FEATURE_MAP_BASE, WEIGHT_BASE, MemoryPlan
from ..passes.streams import StreamPlan, assign_streams
from ..passes.tiling_sink import TILING_SINK_OP
from ..platform.soc import SocSpec
from ..proto import task_pb2
from ..version import __version__
from . import sink, superkernel
from .aicore import KernelInfo, kernel_name, kernel_task
from .control_tasks import rts_tasks
from .hccl import hccl_tasks
from .labels import (
    LABEL_OWNER,
    SWITCH_STREAMS,
    LabelPlan,
    branch_regions,
    give_switch_streams,
    is_control,
    lower_labels,
    region_nodes,
)

# the tasks of the nodes that run no AI Core / AICPU kernel, by their op's task kind (OpSpec.task_kind): one row
# per kind. Each builder takes (node, op id, memory plan, stream, the op's task-generation attributes to fill).
TASK_BUILDERS = {"rts": rts_tasks, "hccl": hccl_tasks}


@dataclass
class StaticModel:
    graph: Graph
    plan: MemoryPlan
    tasks: list
    kernels: dict
    tilings: dict[str, TilingResult]
    sink_ops: list[str]
    stream_num: int
    event_num: int
    node_attrs: dict[str, dict] = field(default_factory=dict)
    partitions: dict[int, bytes] = field(default_factory=dict)
    streams: StreamPlan | None = None
    ids: dict[str, int] = field(default_factory=dict)      # op ids over the graph and its subgraphs
    label_num: int = 0


def _const_depend_values(node, spec) -> dict:
    return {i: node.inputs[i].data for i in spec.tiling_depend
            if i < len(node.inputs) and node.inputs[i] is not None and node.inputs[i].is_const}


def tile(graph: Graph, soc: SocSpec) -> dict[str, TilingResult]:
    """Compile-time tiling. Sink ops run it once on the host with worst-case placeholder values: that fixes
    their workspace; the real tiling runs on the device's AICPU."""
    out = {}
    for node in all_nodes(graph):
        spec = get_op(node.op_type)
        if spec.no_task or spec.task_kind != "kernel":
            continue
        depend = _const_depend_values(node, spec)
        ctx = tiling_context(spec, [v.desc if v is not None else None for v in node.inputs],
                             [v.desc for v in node.outputs], node.attrs, soc, depend)
        if node.attrs.get(TILING_SINK_OP):
            ctx.depend_values.update({k: v for k, v in spec.placeholder_values(ctx).items() if k not in depend})
        try:
            res = spec.tiling(ctx)
        except OpError as exc:
            raise invalid(node, f"its tiling failed: {exc}") from None
        except struct.error as exc:   # a value its tiling data cannot hold (a dim or pad beyond the field width)
            raise invalid(node, f"a value does not fit its tiling data ({exc})") from None
        if res.block_dim < 1:
            raise AtcError("E19999", message=f"Tiling of node {node.name} returned block_dim {res.block_dim}")
        if node.attrs.get(TILING_SINK_OP) and spec.is_custom:
            res.workspace = list(res.workspace) + [sink.CUSTOM_TILING_OP_DUMP_SIZE]
        out[node.name] = res
    return out


def check_device_memory(name: str, plan: MemoryPlan, soc: SocSpec) -> None:
    """The feature map and the weights must fit the SoC's device memory (SoCInfo memory_size)."""
    need = plan.memory_size + plan.weight_size
    if soc.memory_size and need > soc.memory_size:
        raise AtcError("E13023", item=f"{name} (feature map {plan.memory_size} B + weights {plan.weight_size} B)",
                       size=need, maxsize=soc.memory_size)


def _produced_inside(v) -> bool:
    return v is not None and v.producer is not None and v.producer.op_type not in ("Data", "Const")


def model_ids(graph: Graph) -> dict[str, int]:
    """Op ids: the root graph's nodes, then each subgraph's (names are unique model-wide)."""
    return {n.name: k for k, n in enumerate(all_nodes(graph))}


def _sequence(graph: Graph, streams: StreamPlan):
    """(kind, node, stream) in task order: a control node's region ("enter", its nodes, "leave") expands
    in place, on the node's stream; the RTS nodes a control node owns in this graph open its region. An If
    lowered to StreamSwitch runs its branches on their streams, and what follows it on its stream moves to
    the merge stream (the parent stream ends at the switches)."""
    owned: dict[str, list] = {}
    for n in graph.nodes:
        if LABEL_OWNER in n.attrs:
            owned.setdefault(n.attrs[LABEL_OWNER], []).append(n)
    moved: dict[int, int] = {}      # a planned stream -> the merge stream its tasks continue on
    for n in graph.nodes:
        if LABEL_OWNER in n.attrs:
            continue
        planned = streams.stream_of.get(n.name, 0)
        s = moved.get(planned, planned)
        if is_control(n) and SWITCH_STREAMS in n.meta:
            yield "enter", n, s
            for m in owned.get(n.name, []):
                yield "node", m, s
            then_s, else_s, merge_s = n.meta[SWITCH_STREAMS]
            for part, bs in zip(branch_regions(n), (then_s, else_s)):
                for m in part:
                    yield "node", m, bs
            moved[planned] = merge_s
            yield "leave", n, merge_s
        elif is_control(n):
            yield "enter", n, s
            for m in owned.get(n.name, []) + region_nodes(n):
                yield "node", m, s
            yield "leave", n, s
        else:
            yield "node", n, s


def compile_static(graph: Graph, ids: dict[str, int] | None, soc: SocSpec, single: bool = False,
                   reuse: bool = True, sink_nops: int | None = None) -> StaticModel:
    """Tasks, streams and memory of a static graph. `single`: --enable_single_stream; `reuse`: not
    --disable_reuse_memory; `sink_nops`: --debug_sink_nops (None: the SoC's prefetch_num)."""
    labels = lower_labels(graph, stream_switch=not single) if any(n.subgraphs for n in graph.nodes) else LabelPlan()
    if labels.label_num or labels.stream_switches:
        for g in all_graphs(graph):
            assign_engines(g)
    ids = model_ids(graph)
    tilings = tile(graph, soc)
    streams = assign_streams(graph, single_stream=single)
    plan = plan_model_memory(graph, {n: t.workspace for n, t in tilings.items()}, streams,
                             reuse=reuse)
    check_device_memory(graph.name, plan, soc)
    streams.num_streams = give_switch_streams(labels, streams.num_streams)   # after planning: no tensor lives there
    nops = soc.prefetch_num if sink_nops is None else sink_nops
    tasks: list[task_pb2.TaskDef] = []
    kernels: dict[str, KernelInfo] = {}
    sink_ops: list[str] = []
    node_attrs: dict[str, dict] = {}
    events = streams.num_events  # sink events come after the stream plan's events
    attached = streams.num_streams
    sk_members: list = []       # pending SuperKernel members of the current scope
    sk_records: list = []       # EVENT_RECORDs owed after the pending super kernel

    def flush_super_kernel():
        if sk_members:
            stream = streams.stream_of[sk_members[0][0].name]
            tasks.append(superkernel.super_kernel_task(sk_members[0][0].attrs[superkernel.SUPER_KERNEL_SCOPE],
                                                       sk_members, plan, stream))
            tasks.extend(sk_records)
            sk_members.clear()
            sk_records.clear()

    for kind, node, stream in _sequence(graph, streams):
        if kind != "node":      # a control node's region: its stream waits before it, records after it
            flush_super_kernel()
            if kind == "enter":
                node.meta["stream_id"] = stream
                tasks.extend(sink.event_task(tt.EVENT_WAIT, stream, e, ids[node.name])
                             for e in streams.waits.get(node.name, []))
            else:
                tasks.extend(sink.event_task(tt.EVENT_RECORD, stream, e, ids[node.name])
                             for e in streams.records.get(node.name, []))
            continue
        spec = get_op(node.op_type)
        if spec.no_task or spec.task_kind == "control":
            node.meta["stream_id"] = stream
            continue
        node.meta["stream_id"] = stream
        if spec.task_kind in TASK_BUILDERS:
            flush_super_kernel()
            tasks.extend(sink.event_task(tt.EVENT_WAIT, stream, e, ids[node.name])
                         for e in streams.waits.get(node.name, []))
            tasks.extend(TASK_BUILDERS[spec.task_kind](node, ids[node.name], plan, stream,
                                                       node_attrs.setdefault(node.name, {})))
            tasks.extend(sink.event_task(tt.EVENT_RECORD, stream, e, ids[node.name])
                         for e in streams.records.get(node.name, []))
            continue
        t = tilings[node.name]
        is_sink = bool(node.attrs.get(TILING_SINK_OP))
        scope = node.attrs.get(superkernel.SUPER_KERNEL_SCOPE)
        if not sk_members or scope != sk_members[0][0].attrs.get(superkernel.SUPER_KERNEL_SCOPE):
            flush_super_kernel()
        if scope:
            superkernel.check_reuse_binary(node, is_sink)
        tasks.extend(sink.event_task(tt.EVENT_WAIT, stream, e, ids[node.name]) for e in streams.waits.get(node.name, []))
        records = [sink.event_task(tt.EVENT_RECORD, stream, e, ids[node.name])
                   for e in streams.records.get(node.name, [])]
        kt = None if scope else kernel_task(node, ids[node.name], t, plan, soc, stream, sink=is_sink)
        name = kernel_name(node)
        engine = node.meta.get("engine", spec.engine)         # AICPU for a node that fell back (passes/engine.py)
        core = node.meta.get("core_type", spec.core_type) if engine != spec.engine else spec.core_type
        kernels.setdefault(name, KernelInfo(name, node.op_type, engine, core, tuple(spec.tiling_keys)))
        attrs = node_attrs.setdefault(node.name, {})
        attrs.update({"_kernelname": name, "tvm_blockdim": t.block_dim, "_tiling_key": t.tiling_key,
                      "compile_info_json": json.dumps({"op_type": node.op_type, "soc": soc.short_soc_version,
                                                       "core_type": core}, sort_keys=True),
                      "_ge_attr_op_kernel_lib_name": "AIcoreEngine" if engine == AICORE else "aicpu_ascend_kernel",
                      "_cube_vector_core_type": core})
        if not is_sink:
            if scope:
                sk_members.append((node, ids[node.name], t, None))
                sk_records.extend(records)
            else:
                tasks.append(kt)
                tasks.extend(records)
            continue
        depend = sorted(i for i in spec.tiling_depend if i < len(node.inputs) and node.inputs[i] is not None
                        and not node.inputs[i].is_const)
        dep_event = None
        if any(_produced_inside(node.inputs[i]) for i in depend):
            dep_event, events = events, events + 1
        res = sink.SinkResources(stream, attached, events, dep_event, sink.so_name_for(node, soc.short_soc_version,
                                                                                     __version__), spec.is_custom)
        events += 1
        attrs.update({"_attached_stream_info": ["tiling"], "_attached_stream_depend_value_input_indices": depend,
                      "_attached_stream_id": res.attached_stream, "_attached_sync_res_info": ["tiling"],
                      "_attached_sync_res_id": res.tiling_event, "op_para_size": sink.MAX_TILING_DATA_SIZE,
                      "_block_dim_placeholder": True})
        if scope:  # SK variant: tiling task notifies the super kernel through an event address
            inside = {id(m[0]) for m in sk_members}
            if any(node.inputs[i].producer is not None and id(node.inputs[i].producer) in inside for i in depend):
                raise AtcError("E19999", message=f"SuperKernel node[{node.name}, {node.op_type}]: its tiling depends "
                                                 "on a value computed inside the same super kernel scope")
            if res.dep_event is not None:
                tasks += [sink.event_task(tt.EVENT_RECORD, stream, res.dep_event, ids[node.name]),
                          sink.event_task(tt.EVENT_WAIT, res.attached_stream, res.dep_event, ids[node.name])]
            tasks.append(superkernel.sk_tiling_task(ids[node.name], res.attached_stream, res.tiling_event,
                                                    res.so_name, res.is_custom))
            sk_members.append((node, ids[node.name], t, res.tiling_event))
            sk_records.extend(records)
        else:
            tasks.extend(sink.sink_sequence(ids[node.name], kt, res, nops, max(len(t.workspace) - 1, 0)))
            tasks.extend(records)
        sink_ops.append(node.name)
        if spec.is_custom:
            so = res.so_name
            kernels.setdefault(so, KernelInfo(so, node.op_type, "CUST_AICPU", "AICPU", ()))
    flush_super_kernel()
    for k, task in enumerate(tasks):
        task.id = k
    stream_num = streams.num_streams + (1 if sink_ops else 0)
    return StaticModel(graph, plan, tasks, kernels, tilings, sink_ops, stream_num, events, node_attrs, streams=streams,
                       ids=ids, label_num=labels.label_num)


def kernel_binary(k: KernelInfo) -> bytes:
    """Our stand-in for a kernel binary: its descriptor (op type, core type, tiling-key entries)."""
    return json.dumps({"kernel_name": k.name, "op_type": k.op_type, "core_type": k.core_type,
                       "tiling_keys": list(k.tiling_keys)}, sort_keys=True).encode()


def task_info(model: StaticModel) -> bytes:
    mtd = task_pb2.ModelTaskDef(version="2.0", memory_size=model.plan.memory_size,
                                weight_size=model.plan.weight_size, stream_num=model.stream_num,
                                event_num=model.event_num, base_addr=FEATURE_MAP_BASE, weight_addr=WEIGHT_BASE)
    mtd.task.extend(model.tasks)
    return mtd.SerializeToString(deterministic=True)


def kernel_partitions(model: StaticModel) -> tuple[bytes, bytes]:
    tbe = build_store([(k.name, kernel_binary(k)) for k in model.kernels.values() if k.engine == AICORE])
    cust = build_store([(k.name, kernel_binary(k)) for k in model.kernels.values() if k.engine == "CUST_AICPU"])
    return tbe, cust

